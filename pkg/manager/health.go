package manager

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/opkit-dev/opkit/internal/budget"
)

// probeSpacing is how often, at most, one path of a probe endpoint runs
// its checks while they pass: a run answers every probe of its path that
// arrives while it runs, or, if every check passed, within probeSpacing
// of its start. Probes are unauthenticated, and the requests checks send
// never wait for the API budget, so without it anyone who reaches the
// port could make the operator send requests as fast as it answers them.
// The kubelet probes each path at most once a second (periodSeconds is at
// least 1). A failure is never reused once its run has finished: a probe
// after it runs the checks again, so that a process that just became
// ready (its cache synced) says so at once.
const probeSpacing = time.Second

// probeTimeout ends a run's context: a run answers many probes, so no one
// probe's context is its. A probe stops waiting when its own ends.
const probeTimeout = 30 * time.Second

// checks is one probe endpoint's named checks, and the last run of each of
// its paths ("" for all of its checks, a name for one).
type checks struct {
	endpoint string
	mu       sync.Mutex
	names    []string
	fns      map[string]notedCheck
	runs     map[string]*run
}

// notedCheck is a check that also says, when it passes, what it found
// (shown with ?verbose); "" for nothing.
type notedCheck func(*http.Request) (note string, err error)

// run is one run of a path's checks. results is written once, before done
// is closed.
type run struct {
	start   time.Time
	done    chan struct{}
	results []result
}

type result struct {
	name, note string
	err        error
}

func newChecks(endpoint string) *checks {
	return &checks{endpoint: endpoint, fns: map[string]notedCheck{}, runs: map[string]*run{}}
}

func (c *checks) add(name string, fn func(*http.Request) error) error {
	if fn == nil {
		return c.addNoted(name, nil)
	}
	return c.addNoted(name, func(r *http.Request) (string, error) { return "", fn(r) })
}

func (c *checks) addNoted(name string, fn notedCheck) error {
	if name == "" || strings.ContainsAny(name, "/ ") || fn == nil {
		return fmt.Errorf("manager: add %s check %q: name it without '/' or spaces, and pass a function", c.endpoint, name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.fns[name]; ok {
		return fmt.Errorf("manager: add %s check %q: a check of that name exists", c.endpoint, name)
	}
	c.names = append(c.names, name)
	c.fns[name] = fn
	return nil
}

// ServeHTTP answers 200 "ok" when every check passes, and 500 listing each
// check and why it failed otherwise, as the Kubernetes API server's probes
// do. /<endpoint>/<name> runs one check; ?verbose lists them all on
// success too. Probes of one path share a run (see probeSpacing).
func (c *checks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	one := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/"+c.endpoint), "/")
	rn := c.run(r, one)
	if rn == nil {
		http.Error(w, fmt.Sprintf("no %s check named %q", c.endpoint, one), http.StatusNotFound)
		return
	}
	select {
	case <-rn.done:
	case <-r.Context().Done():
		return
	}
	var b strings.Builder
	failed := false
	for _, res := range rn.results {
		switch {
		case res.err != nil:
			failed = true
			fmt.Fprintf(&b, "[-]%s failed: %v\n", res.name, res.err)
		case res.note != "":
			fmt.Fprintf(&b, "[+]%s ok: %s\n", res.name, res.note)
		default:
			fmt.Fprintf(&b, "[+]%s ok\n", res.name)
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if failed {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "%s%s check failed\n", b.String(), c.endpoint)
		return
	}
	if _, verbose := r.URL.Query()["verbose"]; verbose {
		fmt.Fprintf(w, "%s%s check passed\n", b.String(), c.endpoint)
		return
	}
	fmt.Fprint(w, "ok")
}

// run returns the run that answers r, a probe of the check named one (""
// for all): the path's last, while it runs, or if it passed, within
// probeSpacing of its start; else a new one, started with r; nil if no
// check is named one.
func (c *checks) run(r *http.Request, one string) *run {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := c.names
	if one != "" {
		if _, ok := c.fns[one]; !ok {
			return nil
		}
		names = []string{one}
	}
	now := time.Now()
	if rn := c.runs[one]; rn != nil && (!rn.finished() || (now.Sub(rn.start) < probeSpacing && rn.passed())) {
		return rn
	}
	rn := &run{start: now, done: make(chan struct{})}
	c.runs[one] = rn
	fns := make([]notedCheck, len(names))
	for i, name := range names {
		fns[i] = c.fns[name]
	}
	go rn.do(r, slices.Clone(names), fns)
	return rn
}

// passed reports whether every check of a finished run passed.
func (rn *run) passed() bool {
	for _, res := range rn.results {
		if res.err != nil {
			return false
		}
	}
	return true
}

func (rn *run) finished() bool {
	select {
	case <-rn.done:
		return true
	default:
		return false
	}
}

// do runs the checks fns, named names, with a copy of r whose context is
// no longer the probe's but ends after probeTimeout, and files the checks'
// requests in the API budget's health lane, which never waits. A check
// that panics fails.
func (rn *run) do(r *http.Request, names []string, fns []notedCheck) {
	defer close(rn.done)
	ctx, cancel := context.WithTimeoutCause(context.WithoutCancel(r.Context()), probeTimeout,
		fmt.Errorf("the health checks ran for longer than %v", probeTimeout))
	defer cancel()
	r = r.Clone(budget.WithLane(ctx, budget.LaneHealth))
	r.Body = http.NoBody
	rn.results = make([]result, len(fns))
	for i, fn := range fns {
		rn.results[i] = result{name: names[i]}
		rn.results[i].note, rn.results[i].err = check(fn, r)
	}
}

func check(fn notedCheck, r *http.Request) (note string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panicked: %v", p)
		}
	}()
	return fn(r)
}

// cacheSynced is the readiness check of the cache: it passes once the
// manager has seen every registered type sync, while no type's list or
// watch is failing, and while none has gone without a watch for longer
// than Options.Health.UnwatchedGrace; it names each type that is not ready
// and why. A watch that fails (forbidden by RBAC) or cannot be reopened
// (the API server out of reach) leaves the cache stale even after it
// synced, so it makes the process unready. Only the types registered
// before the cache started count: a kind a controller watches from run
// time on (its CRD not installed, deleted, forbidden) must not make the
// whole operator unready; its owner reads its Lister's Status.
func (m *Manager) cacheSynced(*http.Request) error {
	var bad []string
	for _, st := range m.cache.Status() {
		switch {
		case st.AfterStart:
		case !st.Synced && st.Err != nil:
			bad = append(bad, fmt.Sprintf("%s not synced: %v", st.GVK, st.Err))
		case !st.Synced:
			bad = append(bad, fmt.Sprintf("%s not synced", st.GVK))
		case st.Err != nil:
			bad = append(bad, fmt.Sprintf("%s synced, but: %v", st.GVK, st.Err))
		case !st.Unwatched.IsZero() && time.Since(st.Unwatched) > m.opts.Health.UnwatchedGrace:
			bad = append(bad, fmt.Sprintf("%s synced, but not watched for %v: is the API server reachable?",
				st.GVK, time.Since(st.Unwatched).Round(time.Second)))
		}
	}
	switch {
	case len(bad) > 0:
		return errors.New(strings.Join(bad, "; "))
	case !m.synced.Load():
		return errors.New("cache not started and synced yet")
	}
	return nil
}
