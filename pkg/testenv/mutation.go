package testenv

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/opkit-dev/opkit/pkg/cache"
)

// MutationDetectorEnv is the variable that turns on opkit's cache mutation
// detector (cache.MutationDetectorEnv): every cache then keeps a copy of
// each object it caches and reports a cached object that was modified, with
// its type, namespace/name, the fields that changed and a diff. Main sets it
// to "true" unless it is set. With cache.MutationTraceEnv=1 as well, the
// report also says where Listers handed the object out.
//
// client-go's own detector (KUBE_CACHE_MUTATION_DETECTOR=true) catches the
// same modifications, but panics from an informer goroutine with two object
// dumps and nothing more: leave it off.
const MutationDetectorEnv = cache.MutationDetectorEnv

// ensureMutationDetector turns opkit's detector on for caches made from now
// on, unless the variable says otherwise.
func ensureMutationDetector() error {
	if _, set := os.LookupEnv(MutationDetectorEnv); set {
		return nil
	}
	if err := os.Setenv(MutationDetectorEnv, "true"); err != nil {
		return fmt.Errorf("turn on the cache mutation detector: %w", err)
	}
	return nil
}

// ReportMutations returns a cache.MutationOptions.OnMutation that fails t
// with the detector's report while t runs. A report that arrives after t
// ended (the cache outlived its test) panics, naming t.
func ReportMutations(t testing.TB) func(*cache.MutationError) {
	var mu sync.Mutex
	ended := false
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		ended = true
	})
	return func(err *cache.MutationError) {
		mu.Lock()
		defer mu.Unlock()
		if ended {
			panic(fmt.Sprintf("after %s ended: %v", t.Name(), err))
		}
		t.Errorf("%v", err)
	}
}
