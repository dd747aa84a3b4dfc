package scaffold

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opkit-dev/opkit/pkg/testenv"
)

// TestSecondVersionConverts goes through a kind's second version as a user
// does: create api in v1alpha1 and v1, create webhook --conversion with v1
// the hub, then spec.foo renamed spec.bar in v1, converted in the spoke's
// ConvertTo and ConvertFrom and set in both samples, beside suspend: false
// under omitempty. The generated project's tests pass, and the round trip
// they make through the API server and the webhook fails, naming the
// function and the field, when ConvertTo or ConvertFrom drops the renamed
// field, and saying why when the CRD does not convert. Then the operator's --local
// mode (make run) converts through its own webhook server: an object made
// as v1alpha1 and patched as v1 (kubectl, as in issue 31) keeps its field.
// Last, a controller test whose cache cannot list through the conversion
// fails at once with the reason.
// It runs go mod tidy and make manifests, so it needs the module proxy or
// a warm module cache, and the control plane make envtest builds.
func TestSecondVersionConverts(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds, tests and runs a generated project")
	}
	dir := newProject(t)
	addAPI(t, dir, APIOptions{Group: "ship", Version: "v1alpha1", Kind: "Frigate", Namespaced: true, Resource: true, Controller: true})
	addAPI(t, dir, APIOptions{Group: "ship", Version: "v1", Kind: "Frigate", Namespaced: true, Resource: true})
	addWebhook(t, dir, WebhookOptions{Group: "ship", Version: "v1", Kind: "Frigate", Conversion: true})

	// What the user edits: the type, the conversion and the samples. Both
	// versions have suspend under omitempty, which the samples set to its
	// zero value: the webhook's JSON leaves it out (issue 48), and the
	// round trip is to take that for the same object.
	const suspend = "Suspend bool `json:\"suspend,omitempty\"`\n"
	replaceIn(t, filepath.Join(dir, "api/v1/frigate_types.go"), "Foo string `json:\"foo,omitempty\"`\n", "Bar string `json:\"bar,omitempty\"`\n"+suspend)
	replaceIn(t, filepath.Join(dir, "api/v1alpha1/frigate_types.go"), "Foo string `json:\"foo,omitempty\"`\n", "Foo string `json:\"foo,omitempty\"`\n"+suspend)
	spoke := filepath.Join(dir, "api/v1alpha1/frigate_conversion.go")
	addToFunc(t, spoke, "func (src *Frigate) ConvertTo(", "dst.Spec.Bar = src.Spec.Foo")
	addToFunc(t, spoke, "func (dst *Frigate) ConvertFrom(", "dst.Spec.Foo = src.Spec.Bar")
	replaceIn(t, filepath.Join(dir, "config/samples/ship_v1alpha1_frigate.yaml"), "foo: bar", "foo: kept-from-v1alpha1\n  suspend: false")
	replaceIn(t, filepath.Join(dir, "config/samples/ship_v1_frigate.yaml"), "foo: bar", "bar: kept-from-v1\n  suspend: false")

	inProject(t, dir, "go", "mod", "tidy", "-e") // the apply configurations are not generated yet
	inProject(t, dir, "make", "manifests")
	inProject(t, dir, "go", "mod", "tidy")
	inProject(t, dir, "go", "test", "-count=1", "./internal/...")

	// A field dropped one way is blamed on that way's function, by name
	// and field, in both round trips that lose it.
	for _, tt := range []struct {
		name, drop string
		want       []string
	}{
		{"ConvertTo drops the renamed field", "dst.Spec.Bar = src.Spec.Foo", []string{
			"Frigate frigate-sample: converting v1alpha1 to v1 (ConvertTo in api/v1alpha1) loses or changes spec.foo",
			"Frigate frigate-v1-sample: converting v1alpha1 to v1 (ConvertTo in api/v1alpha1) loses or changes spec.foo",
			`"foo": string("kept-from-v1alpha1")`,
		}},
		{"ConvertFrom drops the renamed field", "dst.Spec.Foo = src.Spec.Bar", []string{
			"Frigate frigate-sample: converting v1 to v1alpha1 (ConvertFrom in api/v1alpha1) loses or changes spec.bar",
			"Frigate frigate-v1-sample: converting v1 to v1alpha1 (ConvertFrom in api/v1alpha1) loses or changes spec.bar",
			`"bar": string("kept-from-v1")`,
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			restore := edit(t, spoke, tt.drop, "")
			defer restore()
			out := failsInProject(t, dir, "go", "test", "-count=1", "-run", "TestFrigateRoundTrip", "./internal/webhook/v1")
			for _, want := range tt.want {
				if !strings.Contains(out, want) {
					t.Errorf("the round trip's failure does not say %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "edit it in") {
				t.Errorf("the round trip's failure blames a sample:\n%s", out)
			}
		})
	}
	t.Run("a CRD that does not convert", func(t *testing.T) {
		restore := edit(t, filepath.Join(dir, "internal/webhook/v1/main_test.go"), `"frigates.ship.example.com",`, "")
		defer restore()
		out := failsInProject(t, dir, "go", "test", "-count=1", "-run", "TestFrigateRoundTrip", "./internal/webhook/v1")
		if want := `the CRD frigates.ship.example.com converts with strategy "None", not through the webhook: list it in ConvertCRDs`; !strings.Contains(out, want) {
			t.Errorf("the round trip's failure does not say %q:\n%s", want, out)
		}
	})
	t.Run("make run", func(t *testing.T) { testLocalConverts(t, dir) })
	// Last: it leaves v1 stored.
	t.Run("a controller's cache that lists through a conversion nobody serves", func(t *testing.T) {
		testCacheCannotConvert(t, dir)
	})
}

// testCacheCannotConvert stores v1, drops the conversion from the
// controllers' tests, and has a controller of v1alpha1 start with a
// Frigate stored: its cache's list fails through the webhook, which its
// watch does not say (it waited out 2 minutes for "context deadline
// exceeded" in issue 31). The test fails at once, saying why.
func testCacheCannotConvert(t *testing.T, dir string) {
	// What moving the storageversion marker to v1 and make manifests do
	// (v1 is first in the CRD), without controller-gen's time.
	crd := filepath.Join(dir, "config/crd/bases/ship.example.com_frigates.yaml")
	edit(t, crd, "storage: false", "storage: v1")
	edit(t, crd, "storage: true", "storage: false")
	edit(t, crd, "storage: v1", "storage: true")
	mainTest := filepath.Join(dir, "internal/controller/main_test.go")
	edit(t, mainTest, "webhookv1.SetupFrigateConversion(mgr),", "")
	edit(t, mainTest, `webhookv1 "example.com/acme-operator/internal/webhook/v1"`, "")
	write(t, filepath.Join(dir, "internal/controller/stored_test.go"), `package controller_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	shipv1 "example.com/acme-operator/api/v1"
	shipv1alpha1 "example.com/acme-operator/api/v1alpha1"
	"example.com/acme-operator/internal/controller"
	"github.com/opkit-dev/opkit/pkg/manager"
)

func TestStoredBeforeStart(t *testing.T) {
	stored := &shipv1.Frigate{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "stored"}}
	if err := newClient(t, shipv1.AddToScheme).Create(t.Context(), stored); err != nil {
		t.Fatal(err)
	}
	startManager(t, shipv1alpha1.AddToScheme, func(mgr *manager.Manager) error {
		_, err := controller.SetupFrigate(mgr)
		return err
	})
}
`)
	start := time.Now()
	out := failsInProject(t, dir, "go", "test", "-count=1", "-run", "TestStoredBeforeStart", "./internal/controller")
	want := "the manager's cache cannot list ship.example.com/v1alpha1, Kind=Frigate: "
	if !strings.Contains(out, want) || !strings.Contains(out, "conversion webhook for ship.example.com/v1, Kind=Frigate failed") {
		t.Errorf("the test's failure does not say %q and why:\n%s", want, out)
	}
	if took := time.Since(start); took > time.Minute {
		t.Errorf("the test took %s to fail", took)
	}
}

// testLocalConverts runs the project's operator as make run does, and
// round-trips an object through both versions with kubectl.
func testLocalConverts(t *testing.T, dir string) {
	inProject(t, dir, "go", "build", "-o", "bin/operator", "./cmd")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "bin/operator"), "--local", "--local-dir", t.TempDir(), "--metrics-bind-address", "0", "--health-probe-bind-address", "0")
	cmd.Dir = dir
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		if err := cmd.Wait(); err != nil {
			t.Errorf("the operator exited with %v; stderr:\n%s", err, stderr.String())
		}
	}()
	// Printed once the samples are created, v1's through the conversion.
	kubeconfig := afterPrefix(stdout, "export KUBECONFIG=")
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	if kubeconfig == "" {
		t.Fatalf("the operator printed no kubeconfig; stderr:\n%s", stderr.String())
	}
	kubectlPath, err := testenv.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	kubectl := func(stdin string, args ...string) string {
		t.Helper()
		c := exec.CommandContext(ctx, kubectlPath, append([]string{"--kubeconfig", kubeconfig, "-n", "default"}, args...)...)
		c.Stdin = strings.NewReader(stdin)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	conv := kubectl("", "get", "crd", "frigates.ship.example.com", "-o", "jsonpath={.spec.conversion.strategy} {.spec.conversion.webhook.clientConfig.url} {.spec.conversion.webhook.clientConfig.caBundle}")
	if f := strings.Fields(conv); len(f) != 3 || f[0] != "Webhook" || !strings.HasPrefix(f[1], "https://127.0.0.1:") || !strings.HasSuffix(f[1], "/convert") {
		t.Errorf("the local CRD's conversion is %q, want strategy Webhook to https://127.0.0.1:<port>/convert with a caBundle", conv)
	}
	kubectl("apiVersion: ship.example.com/v1alpha1\nkind: Frigate\nmetadata:\n  name: patched\nspec:\n  foo: keep-me\n", "create", "-f", "-")
	kubectl("", "patch", "frigates.v1.ship.example.com", "patched", "--type", "merge", "-p", `{"metadata":{"labels":{"patched-as":"v1"}}}`)
	for _, tt := range []struct{ resource, name, want string }{
		{"frigates.v1alpha1.ship.example.com", "patched", `{"foo":"keep-me"}`},
		{"frigates.v1.ship.example.com", "patched", `{"bar":"keep-me"}`},
		{"frigates.v1alpha1.ship.example.com", "frigate-v1-sample", `{"foo":"kept-from-v1"}`},
	} {
		if got := kubectl("", "get", tt.resource, tt.name, "-o", "jsonpath={.spec}"); got != tt.want {
			t.Errorf("%s %s: spec %s, want %s", tt.resource, tt.name, got, tt.want)
		}
	}
}

// afterPrefix reads r up to a line that starts with prefix (spaces
// aside) and returns the rest of that line; "" if none does.
func afterPrefix(r io.Reader, prefix string) string {
	s := bufio.NewScanner(r)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), prefix); ok {
			return rest
		}
	}
	return ""
}

// addToFunc adds line at the end of the function whose declaration starts
// with decl in the Go file at path, before its last return.
func addToFunc(t *testing.T, path, decl, line string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	at := strings.Index(src, decl)
	end := strings.Index(src[max(at, 0):], "\n\treturn nil\n}")
	if at < 0 || end < 0 {
		t.Fatalf("%s has no %q ending in return nil:\n%s", path, decl, src)
	}
	at += end
	write(t, path, src[:at]+"\n\t"+line+src[at:])
}

// edit replaces old by new in the file at path, once, and returns what
// puts the file back.
func edit(t *testing.T, path, old, new string) (restore func()) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s holds no %q:\n%s", path, old, b)
	}
	write(t, path, strings.Replace(string(b), old, new, 1))
	return func() { write(t, path, string(b)) }
}

// inProject runs a command in the project in dir and fails t if it fails.
func inProject(t *testing.T, dir string, args ...string) {
	t.Helper()
	if out, err := projectCommand(t, dir, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// failsInProject runs a command in the project in dir, fails t unless it
// fails, and returns its output.
func failsInProject(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := projectCommand(t, dir, args...).CombinedOutput()
	if err == nil {
		t.Fatalf("%s passed, want it to fail:\n%s", strings.Join(args, " "), out)
	}
	return string(out)
}

func projectCommand(t *testing.T, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(t.Context(), args[0], args[1:]...)
	cmd.Dir = dir
	// Not the GOFLAGS or MAKEFLAGS a make of opkit passes down.
	cmd.Env = append(os.Environ(), "GOFLAGS=", "MAKEFLAGS=", "MAKELEVEL=")
	return cmd
}
