package testenv

import (
	"flag"
	"testing"
)

// Importing testenv leaves the global flag set alone, so that a user's own
// -kubeconfig (see internal/flagtest) does not collide with one of ours.
func TestImportRegistersNoGlobalFlag(t *testing.T) {
	for _, name := range []string{"kubeconfig", "master"} {
		if f := flag.CommandLine.Lookup(name); f != nil {
			t.Errorf("flag -%s is registered on the global flag set (%q) by an import of testenv", name, f.Usage)
		}
	}
}
