package manager_test

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
)

// A kind registered after the cache started, whose CRD is not installed,
// leaves the operator ready: its owner learns why from its Lister's
// Status, not from /readyz.
func TestRunTimeKindDoesNotMakeTheOperatorUnready(t *testing.T) {
	ns := env.Namespace(t)
	m := newManager(t, ns, manager.Options{})
	if _, err := cache.Register[*corev1.ConfigMap](m.Cache(), cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	start(t, m)
	probes := "http://" + m.HealthProbeAddr()
	eventually(t, "readiness", func() bool { code, _ := get(t, probes+"/readyz"); return code == 200 })

	missing := schema.GroupVersionKind{Group: "missing.opkit.dev", Version: "v1", Kind: "Nothing"}
	l, err := cache.Unstructured(m.Cache(), missing, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Lister's Status to say the CRD is missing", func() bool { return errors.Is(l.Status().Err, cache.ErrNotInstalled) })
	if st := l.Status(); !st.AfterStart || st.Installed || st.Synced {
		t.Errorf("Status of a kind registered at run time, not installed = %+v, want AfterStart, not installed", st)
	}
	if code, body := get(t, probes+"/readyz"); code != 200 {
		t.Errorf("/readyz with a run-time kind not installed = %d %q, want 200", code, body)
	}
}
