package faults

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
)

// span is a time an operator was acting: a reconcile or a write.
type span struct {
	start, end time.Time
	what       string
}

func (s span) String() string {
	return fmt.Sprintf("%s [%s, %s]", s.what, s.start.Format("15:04:05.000"), s.end.Format("15:04:05.000"))
}

// activity records when one replica reconciles and writes. It is safe for
// concurrent use.
type activity struct {
	mu    sync.Mutex
	spans []span
}

func (a *activity) add(start, end time.Time, what string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.spans = append(a.spans, span{start, end, what})
}

func (a *activity) all() []span {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.spans)
}

// bounds returns the earliest start and the latest end; ok is false when
// nothing was recorded.
func (a *activity) bounds() (first, last time.Time, ok bool) {
	for _, s := range a.all() {
		if !ok || s.start.Before(first) {
			first = s.start
		}
		if !ok || s.end.After(last) {
			last = s.end
		}
		ok = true
	}
	return first, last, ok
}

// overlaps returns the pairs of spans of a and b that overlap in time.
func overlaps(a, b *activity) []string {
	var out []string
	for _, x := range a.all() {
		for _, y := range b.all() {
			if x.start.Before(y.end) && y.start.Before(x.end) {
				out = append(out, x.String()+" and "+y.String())
			}
		}
	}
	return out
}

// logger returns a logger for the controller that records each reconcile:
// the controller logs "Reconciled" with its duration in seconds (at V(1))
// when one ends, and an error when one fails.
func (a *activity) logger() logr.Logger { return logr.New(activitySink{a}) }

type activitySink struct{ a *activity }

func (activitySink) Init(logr.RuntimeInfo)  {}
func (activitySink) Enabled(level int) bool { return level <= 1 }
func (s activitySink) Info(_ int, msg string, kv ...any) {
	if !strings.HasPrefix(msg, "Reconciled") {
		return
	}
	end := time.Now()
	for i := 0; i+1 < len(kv); i += 2 {
		if secs, ok := kv[i+1].(float64); ok && kv[i] == "seconds" {
			s.a.add(end.Add(-time.Duration(secs*float64(time.Second))), end, "reconcile")
		}
	}
}
func (s activitySink) Error(error, string, ...any) {
	now := time.Now()
	s.a.add(now, now, "failed reconcile")
}
func (s activitySink) WithValues(...any) logr.LogSink { return s }
func (s activitySink) WithName(string) logr.LogSink   { return s }

// recordWrites wraps cfg's transport to record every write but those of
// leader election and Events, which a standby may make too.
func (a *activity) recordWrites(cfg *rest.Config) *rest.Config {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodGet || strings.Contains(req.URL.Path, "/leases") || strings.Contains(req.URL.Path, "/events") {
				return rt.RoundTrip(req)
			}
			start := time.Now()
			resp, err := rt.RoundTrip(req)
			a.add(start, time.Now(), req.Method+" "+req.URL.Path)
			return resp, err
		})
	})
	return cfg
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
