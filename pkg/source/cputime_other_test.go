//go:build !unix

package source_test

import "time"

// cpuTime is not measured off unix.
func cpuTime() time.Duration { return 0 }
