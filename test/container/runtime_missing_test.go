package container

import (
	"strings"
	"testing"
)

// The skip message must say what is missing and how to get it.
func TestRuntimeMissingNamesRunc(t *testing.T) {
	if runtimeMissing() != "" {
		t.Skipf("this machine lacks more than runc: %s", runtimeMissing())
	}
	t.Setenv("PATH", t.TempDir())
	if why := runtimeMissing(); !strings.Contains(why, "no runc in PATH") || !strings.Contains(why, "apt-get install -y runc") {
		t.Errorf("runtimeMissing() without runc in PATH = %q, want it to name runc and how to install it", why)
	}
}
