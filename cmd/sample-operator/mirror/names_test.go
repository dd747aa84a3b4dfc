package mirror_test

import (
	"testing"

	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
	"github.com/opkit-dev/opkit/pkg/finalizer"
)

// The finalizer's name is persisted on Mirrors in clusters: an operator
// that renamed it would never remove the old one, and deleted Mirrors would
// hang. finalizer.Finalize also refuses a name without a domain prefix.
func TestFinalizerName(t *testing.T) {
	if want := "samples.opkit.dev/copies"; mirror.Finalizer != want {
		t.Errorf("Finalizer = %q, want %q: it is persisted on Mirrors", mirror.Finalizer, want)
	}
	if err := finalizer.Validate(mirror.Finalizer); err != nil {
		t.Error(err)
	}
}
