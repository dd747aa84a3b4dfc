package fleet_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/fleet"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// startFleet runs f until the test ends.
func startFleet(t *testing.T, f *fleet.Fleet) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := f.Start(ctx); err != nil {
			t.Errorf("fleet: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// engage engages a member named after, and confined to, a new namespace,
// and returns it once its cache has synced.
func engage(t *testing.T, f *fleet.Fleet) *fleet.Cluster {
	t.Helper()
	ns := env.Namespace(t)
	if err := f.Engage(t.Context(), fleet.Member{Name: ns, Config: env.Config(), Namespace: ns}); err != nil {
		t.Fatal(err)
	}
	c := mustCluster(t, f, ns)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := c.Cache().WaitForSync(ctx); err != nil {
		t.Fatalf("member %s's cache: %v", ns, err)
	}
	return c
}

// counter is a fleet reconciler that counts up to limit, in each member,
// in the ConfigMap of its request: it reads the count through the member's
// CachedClient and writes count+1 with the member's Writer, then asks to
// be reconciled again at once. A reconcile that reads a count older than
// its member's last write is a stale read.
type counter struct {
	limit int
	mu    sync.Mutex
	wrote map[string]int // by member: the last count written
	stale []string
}

func (r *counter) Reconcile(ctx context.Context, req fleet.Request) (reconcile.Result, error) {
	member := fleet.ClusterFrom(ctx)
	cm := &corev1.ConfigMap{}
	if err := member.CachedClient().Get(ctx, client.ObjectKey{Namespace: req.Namespace, Name: req.Name}, cm); err != nil {
		return reconcile.Done(), client.IgnoreNotFound(err)
	}
	n, _ := strconv.Atoi(cm.Data["n"])
	r.mu.Lock()
	if n < r.wrote[req.Cluster] {
		r.stale = append(r.stale, req.Cluster+" read "+strconv.Itoa(n)+" after writing "+strconv.Itoa(r.wrote[req.Cluster]))
	}
	r.mu.Unlock()
	if n >= r.limit {
		return reconcile.Done(), nil
	}
	cm.Data = map[string]string{"n": strconv.Itoa(n + 1)}
	if err := member.Writer("counter").Update(ctx, cm); err != nil {
		return reconcile.Done(), err
	}
	r.mu.Lock()
	r.wrote[req.Cluster] = n + 1
	r.mu.Unlock()
	// At once, before the write's watch event (RequeueAfter(0) is Done).
	return reconcile.RequeueAfter(time.Nanosecond), nil
}

// A write through a member's Writer is read back by the next reconcile of
// the key from the member's cache: each member's writes are waited for in
// its own cache (read-your-writes), so no reconcile reads a count older
// than the one it wrote last, in any member.
func TestMemberReadsItsWrites(t *testing.T) {
	const limit = 15
	f := newFleet(t, fleet.Options{})
	cms, err := fleet.Register[*corev1.ConfigMap](f, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := &counter{limit: limit, wrote: map[string]int{}}
	ctl, err := controller.New[fleet.Request]("counter", fleet.Reconciler(f, r), controller.Options[fleet.Request]{
		Tenant: fleet.Request.Tenant, ReadYourWritesTimeout: 2 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := ctl.Watch(fleet.Watch(cms, fleet.EnqueueObject[*corev1.ConfigMap]())); err != nil {
		t.Fatal(err)
	}
	startFleet(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := ctl.Start(ctx); err != nil {
			t.Errorf("controller: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	members := []*fleet.Cluster{engage(t, f), engage(t, f)}
	for _, m := range members {
		if _, err := env.Client().CoreV1().ConfigMaps(m.Namespace()).Create(t.Context(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "count"}, Data: map[string]string{"n": "0"},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range members {
		err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			cm, err := env.Client().CoreV1().ConfigMaps(m.Namespace()).Get(ctx, "count", metav1.GetOptions{})
			return err == nil && cm.Data["n"] == strconv.Itoa(limit), nil
		})
		if err != nil {
			t.Fatalf("member %s never counted to %d: %v", m.Name(), limit, err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.stale) > 0 {
		t.Errorf("reconciles read counts older than their own writes:\n%s", strings.Join(r.stale, "\n"))
	}
}

// writes returns opkit_client_writes_total for controller, verb and result.
func writes(t *testing.T, reg *prometheus.Registry, controller, verb, result string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "opkit_client_writes_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if got["controller"] == controller && got["verb"] == verb && got["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// An apply that would change nothing is skipped by what the member's own
// cache holds: applied again in one member it is not sent; the same apply
// in another member, whose object is another, is sent.
func TestMemberSkipsNoOpApplies(t *testing.T) {
	reg := prometheus.NewRegistry()
	f := newFleet(t, fleet.Options{Registerer: reg})
	if _, err := fleet.Register[*corev1.ConfigMap](f, cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	startFleet(t, f)
	a, b := engage(t, f), engage(t, f)
	apply := func(m *fleet.Cluster) string {
		t.Helper()
		cm := corev1ac.ConfigMap("applied", m.Namespace()).WithData(map[string]string{"k": "v"})
		if err := m.Writer("applier").Apply(t.Context(), cm); err != nil {
			t.Fatalf("apply in %s: %v", m.Name(), err)
		}
		return *cm.ResourceVersion
	}
	waitCached := func(m *fleet.Cluster, rv string) {
		t.Helper()
		err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			cm := &corev1.ConfigMap{}
			err := m.CachedClient().Get(ctx, client.ObjectKey{Namespace: m.Namespace(), Name: "applied"}, cm)
			return err == nil && cm.ResourceVersion == rv, nil
		})
		if err != nil {
			t.Fatalf("member %s's cache never held resourceVersion %s: %v", m.Name(), rv, err)
		}
	}
	counts := func(sent, skipped float64) {
		t.Helper()
		if s, k := writes(t, reg, "applier", "apply", "sent"), writes(t, reg, "applier", "apply", "skipped"); s != sent || k != skipped {
			t.Fatalf("applies sent %v, skipped %v; want %v and %v", s, k, sent, skipped)
		}
	}
	rv := apply(a)
	waitCached(a, rv)
	counts(1, 0)
	if again := apply(a); again != rv {
		t.Errorf("the skipped apply filled resourceVersion %s, want the cached %s", again, rv)
	}
	counts(1, 1)
	apply(b)
	counts(2, 1)
	if a.Writer("applier") != a.Writer("applier") {
		t.Errorf("a member's writer of one controller is made anew on each call")
	}
}

// A member's WriterAs lets that member's API server decide, by its RBAC:
// a user the member's RBAC does not allow is refused with a 403 though
// the operator's own writer may write; the same user writes in another
// member whose RBAC allows it; and no member's writer reaches another's
// namespace.
func TestMemberWriterAsLetsItsAPIServerDecide(t *testing.T) {
	f := newFleet(t, fleet.Options{})
	if _, err := fleet.Register[*corev1.ConfigMap](f, cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	startFleet(t, f)
	denied, allowed := engage(t, f), engage(t, f)
	alice := rest.ImpersonationConfig{UserName: "alice-" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	grantUser(t, allowed.Namespace(), alice.UserName, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create", "get"}})
	cm := func(m *fleet.Cluster, name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace(), Name: name}, Data: map[string]string{"k": "v"}}
	}

	err := denied.WriterAs("copier", alice).Create(t.Context(), cm(denied, "as-alice"))
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "`+alice.UserName+`" cannot create resource "configmaps"`) {
		t.Errorf("create as %s where the member's RBAC denies it: %v, want the API server's 403", alice.UserName, err)
	}
	// Reads go to the member's API server as the user, not to the cache,
	// which holds what the user may not read.
	if err := denied.WriterAs("copier", alice).Get(t.Context(), client.ObjectKey{Namespace: denied.Namespace(), Name: "kube-root-ca.crt"}, &corev1.ConfigMap{}); !apierrors.IsForbidden(err) {
		t.Errorf("get as %s where the member's RBAC denies it: %v, want the API server's 403", alice.UserName, err)
	}
	if err := denied.Writer("copier").Create(t.Context(), cm(denied, "as-operator")); err != nil {
		t.Errorf("the operator's own writer in the same member: %v", err)
	}

	// The RoleBinding reaches the authorizer a moment after it is made.
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := allowed.WriterAs("copier", alice).Create(ctx, cm(allowed, "as-alice"))
		return !apierrors.IsForbidden(err), err
	})
	if err != nil {
		t.Fatalf("create as %s where the member's RBAC allows it: %v", alice.UserName, err)
	}
	got := &corev1.ConfigMap{}
	if err := allowed.WriterAs("copier", alice).Get(t.Context(), client.ObjectKey{Namespace: allowed.Namespace(), Name: "as-alice"}, got); err != nil {
		t.Fatalf("get as %s: %v", alice.UserName, err)
	}
	if mf := got.ManagedFields; len(mf) != 1 || mf[0].Manager != "copier" {
		t.Errorf("managedFields %+v, want one entry of field manager copier", mf)
	}

	// Confined: the allowed member's writer, as the operator or as
	// alice, does not reach the denied member's namespace.
	for name, w := range map[string]client.Client{"Writer": allowed.Writer("copier"), "WriterAs": allowed.WriterAs("copier", alice),
		"CachedClient": allowed.CachedClient()} {
		if err := w.Create(t.Context(), cm(denied, "stray-"+strings.ToLower(name))); err == nil {
			t.Errorf("member %s's %s created a ConfigMap in %s", allowed.Name(), name, denied.Namespace())
		}
	}
	if err := allowed.WriterAs("copier", rest.ImpersonationConfig{Groups: []string{"system:masters"}}).Create(t.Context(), cm(allowed, "nameless")); err == nil {
		t.Errorf("create as a user without a name: no error, want a refusal")
	}
	for _, name := range []string{"stray-writer", "stray-writeras", "stray-cachedclient"} {
		if _, err := env.Client().CoreV1().ConfigMaps(denied.Namespace()).Get(t.Context(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s in %s: %v, want NotFound", name, denied.Namespace(), err)
		}
	}
	if _, err := env.Client().CoreV1().ConfigMaps(allowed.Namespace()).Get(t.Context(), "nameless", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the nameless create reached the API server: %v", err)
	}
}

// grantUser gives the user rule in ns, through a Role and a RoleBinding
// of their own.
func grantUser(t *testing.T, ns, user string, rule rbacv1.PolicyRule) {
	t.Helper()
	role, err := env.Client().RbacV1().Roles(ns).Create(t.Context(), &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "grant"}, Rules: []rbacv1.PolicyRule{rule},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client().RbacV1().RoleBindings(ns).Create(t.Context(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A cached object modified in place in a member's cache is reported,
// naming the member; so is a read, through a member's CachedClient, of a
// kind nobody registered.
func TestMemberCacheReportsNameTheMember(t *testing.T) {
	mutations := make(chan *cache.MutationError, 10)
	reads := make(chan *cache.UnregisteredReadError, 10)
	f := newFleet(t, fleet.Options{
		Mutations: cache.MutationOptions{Detect: true, TraceReads: true, Interval: 20 * time.Millisecond,
			OnMutation: func(err *cache.MutationError) { mutations <- err }},
		UnregisteredReads: cache.UnregisteredReadOptions{Fail: true, OnRead: func(err *cache.UnregisteredReadError) { reads <- err }},
	})
	cms, err := fleet.Register[*corev1.ConfigMap](f, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	startFleet(t, f)
	m := engage(t, f)
	if _, err := env.Client().CoreV1().ConfigMaps(m.Namespace()).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "shared"}, Data: map[string]string{"k": "v"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	l, err := cms.In(m.Name())
	if err != nil {
		t.Fatal(err)
	}
	var cm *corev1.ConfigMap
	err = wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		cm, err = l.Get(m.Namespace(), "shared")
		return err == nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["k"] = "modified in place" // the bug the detector is for
	// A traced read takes the detector's lock, which orders the
	// modification before the detector's next check for the race
	// detector: this test modifies the object on purpose.
	if _, err := l.Get(m.Namespace(), "shared"); err != nil {
		t.Fatal(err)
	}

	select {
	case err := <-mutations:
		if err.Cluster != m.Name() || !strings.Contains(err.Error(), `of member cluster "`+m.Name()+`"`) || err.Name != "shared" ||
			!strings.Contains(err.Error(), "TestMemberCacheReportsNameTheMember") {
			t.Errorf("mutation report: cluster %q, %v; want it to name member %s, the object and its reader", err.Cluster, err, m.Name())
		}
	case <-time.After(time.Minute):
		t.Fatal("no mutation reported")
	}

	err = m.CachedClient().Get(t.Context(), client.ObjectKey{Namespace: m.Namespace(), Name: "any"}, &corev1.Secret{})
	if !errors.Is(err, cache.ErrNotRegistered) {
		t.Errorf("read of a kind nobody registered: %v, want ErrNotRegistered", err)
	}
	select {
	case err := <-reads:
		if err.Cluster != m.Name() || !strings.Contains(err.Error(), `of member cluster "`+m.Name()+`"`) {
			t.Errorf("unregistered read report: cluster %q, %v; want it to name member %s", err.Cluster, err, m.Name())
		}
	default:
		t.Error("no unregistered read reported")
	}
}

// A member disengaged writes nothing more, whoever holds its clients and
// with whatever context: every request through them is refused with
// ErrNotEngaged before it is sent, so a member whose kubeconfig was
// revoked, or that another replica took over, is not written through a
// client kept from before.
func TestDisengagedMemberWritesNothing(t *testing.T) {
	f := newFleet(t, fleet.Options{})
	if _, err := fleet.Register[*corev1.ConfigMap](f, cache.TypeOptions{}); err != nil {
		t.Fatal(err)
	}
	startFleet(t, f)
	ns := env.Namespace(t)
	ctx, cancel := context.WithCancel(t.Context())
	if err := f.Engage(ctx, fleet.Member{Name: "gone", Config: env.Config(), Namespace: ns}); err != nil {
		t.Fatal(err)
	}
	m := mustCluster(t, f, "gone")
	kept := map[string]client.Client{
		"Client": m.Client(), "CachedClient": m.CachedClient(), "Writer": m.Writer("w"),
		"WriterAs": m.WriterAs("w", rest.ImpersonationConfig{UserName: "alice"}),
	}
	cancel()
	waitEngaged(t, f, "gone", false)
	for name, c := range kept {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "after-" + strings.ToLower(name)}}
		if err := c.Create(context.Background(), cm); !errors.Is(err, fleet.ErrNotEngaged) {
			t.Errorf("%s of the disengaged member: create: %v, want ErrNotEngaged", name, err)
		}
		if _, err := env.Client().CoreV1().ConfigMaps(ns).Get(t.Context(), cm.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s of the disengaged member reached the API server: %v", name, err)
		}
	}
	for name, c := range map[string]client.Client{"Writer": m.Writer("w"), "WriterAs": m.WriterAs("w", rest.ImpersonationConfig{UserName: "alice"})} {
		if err := c.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "late"}}); !errors.Is(err, fleet.ErrNotEngaged) {
			t.Errorf("%s asked for once the member was disengaged: create: %v, want ErrNotEngaged", name, err)
		}
	}
}
