package main

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// listRequests is the name of the counter of requests for a resource's
// whole state, by resource (group/resource, the core group's as
// resource alone).
const listRequests = "crmirror_list_requests_total"

// listCounter counts the requests that fetch a resource's whole state: a
// GET of a collection that is not a watch (a list), or a watch with
// sendInitialEvents=true (client-go's streaming list). An informer's
// first such request is its initial sync; any later one is a relist.
// It is safe for concurrent use.
type listCounter struct {
	requests *prometheus.CounterVec
}

func newListCounter(reg prometheus.Registerer) (*listCounter, error) {
	c := &listCounter{requests: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: listRequests,
		Help: "Requests for a resource's whole state (lists, and watches that send initial events), by resource.",
	}, []string{"resource"})}
	if err := reg.Register(c.requests); err != nil {
		return nil, fmt.Errorf("register %s: %w", listRequests, err)
	}
	return c, nil
}

// wrap has the shape of rest.Config.Wrap's argument.
func (c *listCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return countingTransport{c: c, rt: rt}
}

type countingTransport struct {
	c  *listCounter
	rt http.RoundTripper
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if res, ok := wholeState(req); ok {
		t.c.requests.WithLabelValues(res).Inc()
	}
	return t.rt.RoundTrip(req)
}

// WrappedRoundTripper lets client-go find the transport underneath.
func (t countingTransport) WrappedRoundTripper() http.RoundTripper { return t.rt }

// wholeState returns the resource whose whole state req asks for, if it
// does.
func wholeState(req *http.Request) (string, bool) {
	if req.Method != http.MethodGet {
		return "", false
	}
	res, ok := collection(req.URL.Path)
	if !ok {
		return "", false
	}
	q := req.URL.Query()
	if (q.Get("watch") == "true" || q.Get("watch") == "1") && q.Get("sendInitialEvents") != "true" {
		return "", false
	}
	return res, true
}

// collection returns the resource of a collection path:
// /api/v1/<resource>, /api/v1/namespaces/<ns>/<resource> and their
// /apis/<group>/<version>/ forms.
func collection(path string) (string, bool) {
	seg := strings.Split(strings.Trim(path, "/"), "/")
	var group string
	var rest []string
	switch {
	case len(seg) >= 2 && seg[0] == "api":
		rest = seg[2:]
	case len(seg) >= 3 && seg[0] == "apis":
		group, rest = seg[1], seg[3:]
	default:
		return "", false
	}
	var res string
	switch {
	case len(rest) == 1:
		res = rest[0]
	case len(rest) == 3 && rest[0] == "namespaces":
		res = rest[2]
	default:
		return "", false
	}
	if group != "" {
		res = group + "/" + res
	}
	return res, true
}
