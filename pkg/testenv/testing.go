package testenv

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Main runs a test package against one control plane: it starts it with
// opts, hands it to setup (which typically stores it in a package variable),
// runs the tests, stops the control plane and exits with the tests' code. If
// the control plane cannot start, Main prints why and exits with code 1
// without running any test.
//
// Main also turns on opkit's cache mutation detector (see
// OPKIT_CACHE_MUTATION_DETECTOR) unless the variable is set, so that a test which
// modifies an object it read from a cache fails, or panics with a report
// naming the object and the changed fields (see ReportMutations); and it
// sets OPKIT_CACHE_FAIL_UNREGISTERED_READS unless it is set, so that a read through the
// cached client of a kind nobody registered fails the tests even when the
// reader swallows its error (see ReportUnregisteredReads). Call it
// from TestMain:
//
//	var env *testenv.Environment
//
//	func TestMain(m *testing.M) {
//		testenv.Main(m, testenv.Options{}, func(e *testenv.Environment) { env = e })
//	}
func Main(m *testing.M, opts Options, setup func(*Environment)) {
	os.Exit(run(m, opts, setup))
}

func run(m *testing.M, opts Options, setup func(*Environment)) int {
	if err := ensureTestChecks(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		return 1
	}
	start := time.Now()
	env, err := Start(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "testenv: control plane at %s started in %s\n", env.config.Host, time.Since(start).Round(time.Millisecond))
	setup(env)
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Namespace creates a namespace for the calling test, named after it with a
// random suffix, and deletes it when the test ends. It fails the test if the
// namespace cannot be created. The control plane runs no namespace
// controller, so a deleted namespace stays Terminating with its objects;
// tests must not rely on namespace deletion removing anything.
func (e *Environment) Namespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: namespacePrefix(t.Name())}}
	ns, err := e.client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create test namespace: %v", err)
	}
	t.Cleanup(func() {
		// t.Context is already canceled during Cleanup.
		err := e.client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
		if err != nil {
			t.Errorf("delete test namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}

var nonDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// namespacePrefix turns a test name into a DNS-1123 label prefix of at most
// 57 characters, leaving room for the five-character random suffix the API
// server appends and a separating dash.
func namespacePrefix(testName string) string {
	p := nonDNS.ReplaceAllString(strings.ToLower(testName), "-")
	p = strings.Trim(p, "-")
	if len(p) > 56 {
		p = strings.TrimRight(p[:56], "-")
	}
	if p == "" {
		p = "test"
	}
	return p + "-"
}
