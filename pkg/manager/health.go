package manager

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// checks is one probe endpoint's named checks.
type checks struct {
	endpoint string
	mu       sync.Mutex
	names    []string
	fns      map[string]func(*http.Request) error
}

func newChecks(endpoint string) *checks {
	return &checks{endpoint: endpoint, fns: map[string]func(*http.Request) error{}}
}

func (c *checks) add(name string, fn func(*http.Request) error) error {
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
		if err := fns[name](r); err != nil {
			failed = true
			fmt.Fprintf(&b, "[-]%s failed: %v\n", name, err)
		} else {
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
// manager has seen every registered type sync, and names each type not
// synced and why otherwise.
func (m *Manager) cacheSynced(*http.Request) error {
	var not []string
	for _, st := range m.cache.Status() {
		if st.Synced {
			continue
		}
		d := st.GVK.String()
		if st.Err != nil {
			d += ": " + st.Err.Error()
		}
		not = append(not, d)
	}
	switch {
	case len(not) > 0:
		return fmt.Errorf("not synced: %s", strings.Join(not, "; "))
	case !m.synced.Load():
		return fmt.Errorf("cache not started and synced yet")
	}
	return nil
}
