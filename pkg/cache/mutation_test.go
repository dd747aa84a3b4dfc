package cache_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/opkit-dev/opkit/internal/cacheaccess"
	"github.com/opkit-dev/opkit/pkg/cache"
)

const mutateEnv = "OPKIT_TEST_MUTATE_CACHED_OBJECT"

// A test that modifies an object a Lister returned fails, with a report
// that names the type, the object and the field, and, with reads traced,
// where the object was read. The test binary runs a test that does so, with
// opkit's detector on (testenv.Main turned it on) and client-go's off.
func TestMutatingACachedObjectFailsTheTest(t *testing.T) {
	if os.Getenv(mutateEnv) != "" {
		mutateCachedObject(t)
		return
	}
	if os.Getenv(cacheaccess.MutationDetectorEnv) != "true" {
		t.Fatalf("%s is %q in a test run through testenv.Main", cacheaccess.MutationDetectorEnv, os.Getenv(cacheaccess.MutationDetectorEnv))
	}
	// Under -race the race detector also reports the test, between the
	// FAIL line and the report: the two are matched apart.
	report := regexp.MustCompile(`(?s)--- FAIL: TestMutatingACachedObjectFailsTheTest .*cache: a cached ConfigMap [a-z0-9-]+/csa was modified in place \(changed: data\.k\); objects from a Lister are shared: DeepCopy before modifying`)
	readBy := regexp.MustCompile(`mutation_test\.go:\d+ by github\.com/opkit-dev/opkit/pkg/cache_test\.mutateCachedObject`)
	for _, tt := range []struct {
		trace string
		want  string
	}{
		{trace: "", want: "run with " + cacheaccess.MutationTraceEnv + "=1 to learn where it was read"},
		{trace: "1", want: "it was read at " + thisFile(t) + ":"},
	} {
		t.Run("trace="+tt.trace, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestMutatingACachedObjectFailsTheTest$", "-test.count=1")
			cmd.Env = append(os.Environ(), mutateEnv+"=1", "KUBE_CACHE_MUTATION_DETECTOR=false", cacheaccess.MutationTraceEnv+"="+tt.trace)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			if err == nil {
				t.Fatalf("the mutating test passed:\n%s", out.String())
			}
			o := out.String()
			if !report.MatchString(o) || !strings.Contains(o, tt.want) || !strings.Contains(o, `+ data.k: "changed"`) {
				t.Errorf("the mutating test failed (%v), but without the report naming the test, type, object, field and diff, and %q:\n%s", err, tt.want, o)
			}
			if tt.trace != "" && !readBy.MatchString(o) {
				t.Errorf("the report does not say mutateCachedObject read the object:\n%s", o)
			}
		})
	}
}

func mutateCachedObject(t *testing.T) {
	ns := env.Namespace(t)
	createConfigMaps(t, ns)
	c := newCache(t, cache.Options{Namespaces: []string{ns}})
	cms, err := cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start(t, c)
	cm, err := cms.Get(ns, "csa")
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["k"] = "changed" // the bug the detector must catch
	// The detector's periodic check fails the test.
	waitFor(t, time.Minute, t.Failed)
}

func thisFile(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd + "/mutation_test.go"
}
