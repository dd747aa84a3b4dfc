package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Writers of several controllers on one registry share one counter; a
// collector of the same name and another shape is an error, not a panic.
func TestNewClientWrites(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, err := NewClientWrites(reg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewClientWrites(reg)
	if err != nil {
		t.Fatal(err)
	}
	a.WithLabelValues("a", VerbApply, WriteSent).Inc()
	b.WithLabelValues("b", VerbPatch, WriteSkipped).Inc()
	if got := testutil.CollectAndCount(reg, ClientWrites); got != 2 {
		t.Errorf("%s series = %d, want 2 in one collector", ClientWrites, got)
	}

	other := prometheus.NewRegistry()
	other.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: ClientWrites, Help: "another shape"}))
	if _, err := NewClientWrites(other); err == nil {
		t.Errorf("NewClientWrites over a %s of another shape = nil error, want one", ClientWrites)
	}
}
