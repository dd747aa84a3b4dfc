package testenv

import (
	"fmt"
	"os"
)

// MutationDetectorEnv is the variable that turns on client-go's cache
// mutation detector: every informer then keeps a copy of each object it
// caches and panics, failing the test binary, when a cached object is
// modified. Main turns it on unless it is set.
const MutationDetectorEnv = "KUBE_CACHE_MUTATION_DETECTOR"

// ensureMutationDetector makes sure the detector is on for this process.
// client-go reads the variable once, when it is initialised, so setting it
// now is too late: unless it is set already, the test binary runs itself
// again with it set. It returns an error only if that fails.
func ensureMutationDetector() error {
	if _, set := os.LookupEnv(MutationDetectorEnv); set {
		return nil
	}
	if err := reexecWith(MutationDetectorEnv + "=true"); err != nil {
		return fmt.Errorf("run the tests again with %s=true: %w", MutationDetectorEnv, err)
	}
	return nil
}
