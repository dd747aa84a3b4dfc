package testenv

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/opkit-dev/opkit/internal/cacheaccess"
	"github.com/opkit-dev/opkit/pkg/cache"
)

// ensureTestChecks turns on, for caches made from now on, opkit's mutation
// detector (OPKIT_CACHE_MUTATION_DETECTOR: every cache keeps a copy of each
// object it caches and reports a cached object that was modified) and the
// reports of unregistered reads (OPKIT_CACHE_FAIL_UNREGISTERED_READS), unless their
// variables say otherwise.
//
// client-go's own detector (KUBE_CACHE_MUTATION_DETECTOR=true) catches the
// same modifications, but panics from an informer goroutine with two object
// dumps and nothing more: leave it off.
func ensureTestChecks() error {
	for _, v := range []string{cacheaccess.MutationDetectorEnv, cacheaccess.UnregisteredReadsEnv} {
		if _, set := os.LookupEnv(v); set {
			continue
		}
		if err := os.Setenv(v, "true"); err != nil {
			return fmt.Errorf("set %s: %w", v, err)
		}
	}
	return nil
}

// ReportMutations returns a cache.MutationOptions.OnMutation that fails t
// with the detector's report while t runs. A report that arrives after t
// ended (the cache outlived its test) panics, naming t.
func ReportMutations(t testing.TB) func(*cache.MutationError) {
	return reportTo(t, func(err *cache.MutationError) string { return err.Error() })
}

// reportTo returns a function that fails t with a report while t runs, and
// panics, naming t, with one that arrives after t ended.
func reportTo[E any](t testing.TB, message func(E) string) func(E) {
	var mu sync.Mutex
	ended := false
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		ended = true
	})
	return func(err E) {
		mu.Lock()
		defer mu.Unlock()
		if ended {
			panic(fmt.Sprintf("after %s ended: %s", t.Name(), message(err)))
		}
		t.Errorf("%s", message(err))
	}
}

// ReportUnregisteredReads returns a cache.UnregisteredReadOptions.OnRead
// that fails t with the report while t runs. A report that arrives after t
// ended panics, naming t.
func ReportUnregisteredReads(t testing.TB) func(*cache.UnregisteredReadError) {
	return reportTo(t, func(err *cache.UnregisteredReadError) string { return err.Error() })
}
