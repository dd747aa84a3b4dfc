package cache_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

const mutateEnv = "OPKIT_TEST_MUTATE_CACHED_OBJECT"

// A test that modifies an object a Lister returned fails: the test binary
// runs a test that does so, and must fail with the mutation detector's
// message. testenv.Main turned the detector on for both.
func TestMutatingACachedObjectFailsTheTest(t *testing.T) {
	if os.Getenv(mutateEnv) != "" {
		mutateCachedObject(t)
		return
	}
	if os.Getenv(testenv.MutationDetectorEnv) != "true" {
		t.Fatalf("%s is %q in a test run through testenv.Main", testenv.MutationDetectorEnv, os.Getenv(testenv.MutationDetectorEnv))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), mutateEnv+"=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err == nil {
		t.Fatalf("the mutating test passed:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "ALTERED!") || !strings.Contains(out.String(), "panic: cache *v1.ConfigMap modified") {
		t.Errorf("the mutating test failed, but not by the mutation detector (%v):\n%s", err, out.String())
	}
}

func mutateCachedObject(t *testing.T) {
	ns := env.Namespace(t)
	createConfigMaps(t, ns)
	c := newCache(t, cache.Options{Namespaces: []string{ns}})
	cms, err := cache.For[*corev1.ConfigMap](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	cm, err := cms.Get(ns, "csa")
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["k"] = "changed" // the bug the detector must catch
	time.Sleep(5 * time.Second)
}
