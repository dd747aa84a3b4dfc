package mirror_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
)

// gets counts the GETs of single ConfigMaps, by path.
type gets struct {
	next http.RoundTripper
	mu   sync.Mutex
	n    map[string]int
}

func (g *gets) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/configmaps/") {
		g.mu.Lock()
		g.n[req.URL.Path]++
		g.mu.Unlock()
	}
	return g.next.RoundTrip(req)
}

func (g *gets) count(ns, name string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n["/api/v1/namespaces/"+ns+"/configmaps/"+name]
}

// The operator caches ConfigMaps as metadata only: a source is fetched in
// full, as the Mirror's ServiceAccount, when its Mirror is reconciled, and
// again after it changes; a ConfigMap that is neither a source nor a copy
// is never fetched, even when it changes. A copy this process wrote is
// told up to date by its digest and resourceVersion, unfetched, and an
// unowned object where a copy would go is still a conflict.
func TestOnlySourcesAreFetched(t *testing.T) {
	g := &gets{n: map[string]int{}}
	cfg := rest.CopyConfig(env.Config())
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { g.next = rt; return g })
	w := operatorWith(t, cfg, mirror.Policy{})
	mine, theirs := w.namespace(map[string]string{"team": "a"}), w.namespace(map[string]string{"team": "a"})
	w.configMap(theirs, "cfg", map[string]string{"owner": "someone else"})
	bystander := w.configMap(w.home, "bystander", map[string]string{"k": "v"})
	src := w.configMap(w.home, "cfg", map[string]string{"k": "v1"})
	m := w.mirror("cfg", v1alpha1.KindConfigMap, "cfg", w.selecting(map[string]string{"team": "a"}))

	w.eventually("a copy", w.hasData(mine, "cfg", map[string]string{"k": "v1"}))
	w.eventually("Conflict", w.ready(m, v1alpha1.ReasonConflict, 1))

	bystander.Data["k"] = "changed"
	if err := w.cl.Update(t.Context(), bystander); err != nil {
		t.Fatal(err)
	}
	src.Data["k"] = "v2"
	if err := w.cl.Update(t.Context(), src); err != nil {
		t.Fatal(err)
	}
	w.eventually("the copy to follow the source", w.hasData(mine, "cfg", map[string]string{"k": "v2"}))
	w.eventually("Conflict still", w.ready(m, v1alpha1.ReasonConflict, 1))

	if n := g.count(w.home, "bystander"); n != 0 {
		t.Errorf("a ConfigMap that is neither a source nor a copy was fetched %d times, want never", n)
	}
	if n := g.count(w.home, "cfg"); n < 2 {
		t.Errorf("the source was fetched %d times, want at least 2: before and after its change", n)
	}
	if n := g.count(mine, "cfg"); n != 0 {
		t.Errorf("the copy was fetched %d times, want never: this process wrote it", n)
	}
}
