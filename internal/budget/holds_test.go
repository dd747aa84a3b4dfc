package budget

import (
	"net/http"
	"testing"
)

// wrapper wraps a transport and says so, as client-go's wrappers do;
// opaque does not say.
type wrapper struct{ next http.RoundTripper }

func (w wrapper) RoundTrip(r *http.Request) (*http.Response, error) { return w.next.RoundTrip(r) }
func (w wrapper) WrappedTransport() http.RoundTripper               { return w.next }

type opaque struct{ next http.RoundTripper }

func (o opaque) RoundTrip(r *http.Request) (*http.Response, error) { return o.next.RoundTrip(r) }

// Holds finds a Budget's transports under the wrappers that say what they
// wrap, and only that Budget's.
func TestHolds(t *testing.T) {
	b, err := New(Options{QPS: 1})
	if err != nil {
		t.Fatal(err)
	}
	other, err := New(Options{QPS: 1})
	if err != nil {
		t.Fatal(err)
	}
	base := http.DefaultTransport
	for _, tc := range []struct {
		name string
		rt   http.RoundTripper
		want bool
	}{
		{"its Transport", b.Transport(base), true},
		{"its LeaseTransport", b.LeaseTransport(base), true},
		{"its Transport under wrappers", wrapper{DefaultLane(wrapper{b.Transport(base)}, LaneInformer)}, true},
		{"another budget's Transport", wrapper{other.Transport(base)}, false},
		{"its Transport under an opaque wrapper", opaque{b.Transport(base)}, false},
		{"no budget", wrapper{base}, false},
		{"nil", nil, false},
	} {
		if got := b.Holds(tc.rt); got != tc.want {
			t.Errorf("%s: Holds = %v, want %v", tc.name, got, tc.want)
		}
	}
}
