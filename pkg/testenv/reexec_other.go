//go:build !unix

package testenv

import (
	"fmt"
	"os"
)

// reexecWith cannot replace the process here; it says what to do instead.
func reexecWith(kv string) error {
	fmt.Fprintf(os.Stderr, "testenv: set %s to run the tests with client-go's cache mutation detector\n", kv)
	return nil
}
