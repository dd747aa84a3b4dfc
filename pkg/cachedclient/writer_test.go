package cachedclient_test

import (
	"context"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/cachedclient"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

// writerFixture is a Writer for controller "mirror" over a cache of the
// ConfigMaps and Pods of one namespace, whose requests to the API server
// are counted.
type writerFixture struct {
	ns       string
	lister   *cache.Lister[*corev1.ConfigMap]
	pods     *cache.Lister[*corev1.Pod]
	writer   crclient.Client
	server   crclient.Client // uncounted, uncached: the API server's view
	requests atomic.Int64
	reg      *prometheus.Registry
}

func newWriterFixture(t *testing.T) *writerFixture {
	t.Helper()
	f := &writerFixture{ns: env.Namespace(t), reg: prometheus.NewRegistry()}
	var err error
	if f.server, err = crclient.New(env.Config(), crclient.Options{}); err != nil {
		t.Fatal(err)
	}
	c, err := cache.New(env.Config(), cache.Options{
		Namespaces: []string{f.ns},
		Mutations:  cache.MutationOptions{OnMutation: testenv.ReportMutations(t)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if f.lister, err = cache.Register[*corev1.ConfigMap](c, cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	if f.pods, err = cache.Register[*corev1.Pod](c, cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	syncCtx, cancelSync := context.WithTimeout(ctx, 30*time.Second)
	defer cancelSync()
	if err := c.WaitForSync(syncCtx); err != nil {
		t.Fatal(err)
	}

	cfg := rest.CopyConfig(env.Config())
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			f.requests.Add(1)
			return next.RoundTrip(r)
		})
	})
	direct, err := crclient.New(cfg, crclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Discover the kinds now, so that the counted requests are writes.
	for _, obj := range []crclient.Object{&corev1.ConfigMap{}, &corev1.Pod{}} {
		if _, err := direct.IsObjectNamespaced(obj); err != nil {
			t.Fatal(err)
		}
	}
	reader := cachedclient.NewReader(c)
	f.writer, err = cachedclient.NewWriter(cachedclient.New(reader, direct), cachedclient.WriterOptions{
		Controller: "mirror",
		Cache:      reader,
		Registerer: f.reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// sent runs write and returns how many requests it made.
func (f *writerFixture) sent(t *testing.T, write func() error) int64 {
	t.Helper()
	before := f.requests.Load()
	if err := write(); err != nil {
		t.Fatal(err)
	}
	return f.requests.Load() - before
}

// writes returns the value of opkit_client_writes_total for mirror.
func (f *writerFixture) writes(t *testing.T, verb, result string) float64 {
	t.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != imetrics.ClientWrites {
			continue
		}
		for _, m := range mf.GetMetric() {
			want := map[string]string{"controller": "mirror", "verb": verb, "result": result}
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if len(got) == len(want) && got["controller"] == want["controller"] && got["verb"] == verb && got["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("%s{controller=mirror,verb=%s,result=%s} not found", imetrics.ClientWrites, verb, result)
	return 0
}

// waitForVersion waits until the cache holds name at resourceVersion rv.
func (f *writerFixture) waitForVersion(t *testing.T, name, rv string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		cm, err := f.lister.Get(f.ns, name)
		return err == nil && cm.ResourceVersion == rv, nil
	})
	if err != nil {
		t.Fatalf("wait for the cache to hold %s/%s at resourceVersion %s: %v", f.ns, name, rv, err)
	}
}

func (f *writerFixture) configMap(name string, data map[string]string) *corev1ac.ConfigMapApplyConfiguration {
	return corev1ac.ConfigMap(name, f.ns).WithData(data)
}

// Apply creates, then updates, with the controller's name as the field
// manager, as the API server (not the cache) records it.
func TestApplyWithTheControllersFieldOwner(t *testing.T) {
	f := newWriterFixture(t)
	for _, v := range []string{"1", "2"} {
		if err := f.writer.Apply(t.Context(), f.configMap("m", map[string]string{"v": v})); err != nil {
			t.Fatalf("apply v=%s: %v", v, err)
		}
		got := &corev1.ConfigMap{}
		if err := f.server.Get(t.Context(), crclient.ObjectKey{Namespace: f.ns, Name: "m"}, got); err != nil {
			t.Fatal(err)
		}
		if got.Data["v"] != v {
			t.Errorf("after apply v=%s the server holds data %v", v, got.Data)
		}
		i := slices.IndexFunc(got.ManagedFields, func(e metav1.ManagedFieldsEntry) bool {
			return e.Manager == "mirror" && e.Operation == metav1.ManagedFieldsOperationApply
		})
		if i < 0 {
			t.Errorf("after apply v=%s managedFields = %+v, want an Apply entry of manager mirror", v, got.ManagedFields)
		}
	}
}

// A second identical apply sends no request once the cache holds what the
// first returned; a changed one is sent; the metric counts both.
func TestIdenticalApplyIsSkipped(t *testing.T) {
	f := newWriterFixture(t)
	first := f.configMap("m", map[string]string{"v": "1"})
	if n := f.sent(t, func() error { return f.writer.Apply(t.Context(), first) }); n != 1 {
		t.Fatalf("the first apply sent %d requests, want 1", n)
	}
	f.waitForVersion(t, "m", *first.ResourceVersion)

	again := f.configMap("m", map[string]string{"v": "1"})
	if n := f.sent(t, func() error { return f.writer.Apply(t.Context(), again) }); n != 0 {
		t.Errorf("an identical apply sent %d requests, want 0", n)
	}
	if again.UID == nil || *again.UID != *first.UID {
		t.Errorf("a skipped apply left the apply configuration's uid %v, want the object's %v, filled from the cache", again.UID, *first.UID)
	}
	if got := f.writes(t, imetrics.VerbApply, imetrics.WriteSkipped); got != 1 {
		t.Errorf("skipped applies = %v, want 1", got)
	}

	dryRun := f.configMap("m", map[string]string{"v": "1"})
	if n := f.sent(t, func() error { return f.writer.Apply(t.Context(), dryRun, crclient.DryRunAll) }); n != 1 {
		t.Errorf("an identical dry-run apply sent %d requests, want 1", n)
	}

	changed := f.configMap("m", map[string]string{"v": "2"})
	if n := f.sent(t, func() error { return f.writer.Apply(t.Context(), changed) }); n != 1 {
		t.Errorf("a changed apply sent %d requests, want 1", n)
	}
	if got := f.writes(t, imetrics.VerbApply, imetrics.WriteSent); got != 3 {
		t.Errorf("sent applies = %v, want 3", got)
	}
}

// An unstructured apply configuration is skipped by the same rule.
func TestIdenticalUnstructuredApplyIsSkipped(t *testing.T) {
	f := newWriterFixture(t)
	ac := func() runtime.ApplyConfiguration {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"namespace": f.ns, "name": "u"},
			"data":     map[string]any{"v": "1"},
		}}
		return crclient.ApplyConfigurationFromUnstructured(u)
	}
	if n := f.sent(t, func() error { return f.writer.Apply(t.Context(), ac()) }); n != 1 {
		t.Fatalf("the first apply sent %d requests, want 1", n)
	}
	cm := &corev1.ConfigMap{}
	if err := f.server.Get(t.Context(), crclient.ObjectKey{Namespace: f.ns, Name: "u"}, cm); err != nil {
		t.Fatal(err)
	}
	f.waitForVersion(t, "u", cm.ResourceVersion)
	if n := f.sent(t, func() error { return f.writer.Apply(t.Context(), ac()) }); n != 0 {
		t.Errorf("an identical unstructured apply sent %d requests, want 0", n)
	}
}

// After someone else's write the cached object is not the one the last
// apply returned, so the same apply is sent, and by ForceOwnership it takes
// the field back.
func TestApplyAfterAnotherWriterIsSent(t *testing.T) {
	f := newWriterFixture(t)
	if err := f.writer.Apply(t.Context(), f.configMap("m", map[string]string{"v": "1"})); err != nil {
		t.Fatal(err)
	}
	edited := &corev1.ConfigMap{}
	if err := f.server.Get(t.Context(), crclient.ObjectKey{Namespace: f.ns, Name: "m"}, edited); err != nil {
		t.Fatal(err)
	}
	edited.Data["v"] = "edited"
	if err := f.server.Update(t.Context(), edited, crclient.FieldOwner("someone")); err != nil {
		t.Fatal(err)
	}
	f.waitForVersion(t, "m", edited.ResourceVersion)

	noForce := &crclient.ApplyOptions{Force: ptr.To(false)}
	if err := f.writer.Apply(t.Context(), f.configMap("m", map[string]string{"v": "1"}), noForce); !apierrors.IsConflict(err) {
		t.Errorf("apply without force over another manager's field = %v, want a conflict", err)
	}
	if n := f.sent(t, func() error { return f.writer.Apply(t.Context(), f.configMap("m", map[string]string{"v": "1"})) }); n != 1 {
		t.Errorf("the apply after another writer's edit sent %d requests, want 1", n)
	}
	got := &corev1.ConfigMap{}
	if err := f.server.Get(t.Context(), crclient.ObjectKey{Namespace: f.ns, Name: "m"}, got); err != nil {
		t.Fatal(err)
	}
	if got.Data["v"] != "1" {
		t.Errorf("after the forced apply the server holds v=%q, want 1", got.Data["v"])
	}
}

// An empty merge patch of a cached object is skipped; a patch that
// changes something is sent.
func TestEmptyMergePatchIsSkipped(t *testing.T) {
	f := newWriterFixture(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "p"}, Data: map[string]string{"v": "1"}}
	if err := f.server.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	f.waitForVersion(t, "p", cm.ResourceVersion)

	got := &corev1.ConfigMap{}
	if err := f.writer.Get(t.Context(), crclient.ObjectKeyFromObject(cm), got); err != nil {
		t.Fatal(err)
	}
	base := got.DeepCopy()
	for _, patch := range []crclient.Patch{
		crclient.MergeFrom(base),
		crclient.StrategicMergeFrom(base),
		crclient.RawPatch(types.JSONPatchType, []byte("[]")),
	} {
		if n := f.sent(t, func() error { return f.writer.Patch(t.Context(), got, patch) }); n != 0 {
			t.Errorf("an empty %s sent %d requests, want 0", patch.Type(), n)
		}
	}
	got.ResourceVersion = "" // the JSON patch's data is fixed: a skip fills the object from the cache
	if err := f.writer.Patch(t.Context(), got, crclient.RawPatch(types.JSONPatchType, []byte("[]"))); err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != cm.ResourceVersion {
		t.Errorf("after a skipped patch the object has resourceVersion %q, want the cached %q", got.ResourceVersion, cm.ResourceVersion)
	}
	if v := f.writes(t, imetrics.VerbPatch, imetrics.WriteSkipped); v != 4 {
		t.Errorf("skipped patches = %v, want 4", v)
	}

	got.Data["v"] = "2"
	if n := f.sent(t, func() error { return f.writer.Patch(t.Context(), got, crclient.MergeFrom(base)) }); n != 1 {
		t.Errorf("a merge patch setting v=2 sent %d requests, want 1", n)
	}
	if v := f.writes(t, imetrics.VerbPatch, imetrics.WriteSent); v != 1 {
		t.Errorf("sent patches = %v, want 1", v)
	}
}

// A write of an object the cache does not hold is sent, even one that
// would be skipped if it did: here the object lives outside the cached
// namespace.
// A status patch from the cached object to a copy that changed nothing
// is not sent, as a patch of the object is not: a reconcile that writes
// its status with client.MergeFrom sends nothing when nothing changed.
func TestEmptyStatusPatchIsSkipped(t *testing.T) {
	f := newWriterFixture(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "s"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
	}
	if err := f.server.Create(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, err := f.pods.Get(f.ns, "s")
		return err == nil, nil
	}); err != nil {
		t.Fatalf("the cache never held the Pod: %v", err)
	}
	cached, err := f.pods.Get(f.ns, "s")
	if err != nil {
		t.Fatal(err)
	}
	cp := cached.DeepCopy()
	if n := f.sent(t, func() error { return f.writer.Status().Patch(t.Context(), cp, crclient.MergeFrom(cached)) }); n != 0 {
		t.Errorf("an empty status patch sent %d requests, want 0", n)
	}
	if v := f.writes(t, imetrics.VerbPatch, imetrics.WriteSkipped); v != 1 {
		t.Errorf("skipped patches = %v, want 1", v)
	}
	cp.Status.Message = "seen"
	if n := f.sent(t, func() error { return f.writer.Status().Patch(t.Context(), cp, crclient.MergeFrom(cached)) }); n != 1 {
		t.Errorf("a status patch setting a message sent %d requests, want 1", n)
	}
	if err := f.server.Get(t.Context(), crclient.ObjectKeyFromObject(pod), pod); err != nil {
		t.Fatal(err)
	}
	if pod.Status.Message != "seen" {
		t.Errorf("status.message = %q after the patch, want seen", pod.Status.Message)
	}
	if v := f.writes(t, imetrics.VerbPatch, imetrics.WriteSent); v != 1 {
		t.Errorf("sent patches = %v, want 1", v)
	}
}

func TestCacheMissIsWritten(t *testing.T) {
	f := newWriterFixture(t)
	other := env.Namespace(t)
	apply := func() error {
		return f.writer.Apply(t.Context(), corev1ac.ConfigMap("m", other).WithData(map[string]string{"v": "1"}))
	}
	for i := range 2 {
		if n := f.sent(t, apply); n != 1 {
			t.Errorf("apply %d of an uncached object sent %d requests, want 1", i+1, n)
		}
	}
	cm := &corev1.ConfigMap{}
	if err := f.server.Get(t.Context(), crclient.ObjectKey{Namespace: other, Name: "m"}, cm); err != nil {
		t.Fatal(err)
	}
	if n := f.sent(t, func() error { return f.writer.Patch(t.Context(), cm, crclient.MergeFrom(cm.DeepCopy())) }); n != 1 {
		t.Errorf("an empty merge patch of an uncached object sent %d requests, want 1", n)
	}
	if v := f.writes(t, imetrics.VerbApply, imetrics.WriteSkipped) + f.writes(t, imetrics.VerbPatch, imetrics.WriteSkipped); v != 0 {
		t.Errorf("skipped writes = %v, want 0", v)
	}
}

// A call's own field owner wins over the controller's.
func TestFieldOwnerOfTheCallWins(t *testing.T) {
	f := newWriterFixture(t)
	if err := f.writer.Apply(t.Context(), f.configMap("m", map[string]string{"v": "1"}), crclient.FieldOwner("other")); err != nil {
		t.Fatal(err)
	}
	got := &corev1.ConfigMap{}
	if err := f.server.Get(t.Context(), crclient.ObjectKey{Namespace: f.ns, Name: "m"}, got); err != nil {
		t.Fatal(err)
	}
	var managers []string
	for _, e := range got.ManagedFields {
		managers = append(managers, e.Manager)
	}
	if !slices.Equal(managers, []string{"other"}) {
		t.Errorf("managers = %v, want [other]", managers)
	}
}

func TestNewWriterNeedsTheController(t *testing.T) {
	if _, err := cachedclient.NewWriter(nil, cachedclient.WriterOptions{}); err == nil {
		t.Error("NewWriter without WriterOptions.Controller = nil error, want one")
	}
}
