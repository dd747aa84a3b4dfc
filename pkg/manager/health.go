package manager

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// checks is one probe endpoint's named checks.
type checks struct {
	endpoint string
	mu       sync.Mutex
	names    []string
	fns      map[string]notedCheck
}

// notedCheck is a check that also says, when it passes, what it found
// (shown with ?verbose); "" for nothing.
type notedCheck func(*http.Request) (note string, err error)

func newChecks(endpoint string) *checks {
	return &checks{endpoint: endpoint, fns: map[string]notedCheck{}}
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
// success too.
func (c *checks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	names := slices.Clone(c.names)
	fns := c.fns
	c.mu.Unlock()
	if one := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/"+c.endpoint), "/"); one != "" {
		if _, ok := fns[one]; !ok {
			http.Error(w, fmt.Sprintf("no %s check named %q", c.endpoint, one), http.StatusNotFound)
			return
		}
		names = []string{one}
	}
	var b strings.Builder
	failed := false
	for _, name := range names {
		note, err := fns[name](r)
		switch {
		case err != nil:
			failed = true
			fmt.Fprintf(&b, "[-]%s failed: %v\n", name, err)
		case note != "":
			fmt.Fprintf(&b, "[+]%s ok: %s\n", name, note)
		default:
			fmt.Fprintf(&b, "[+]%s ok\n", name)
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
