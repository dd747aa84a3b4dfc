package fleet_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/fleet"
	"github.com/opkit-dev/opkit/pkg/queue"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// copier is a fleet controller's reconciler: in each member, it copies
// the ConfigMap "source" to "copy", reading through the member's Lister
// and writing with the member's Writer.
type copier struct {
	cms *fleet.Lister[*corev1.ConfigMap]
}

func (c copier) Reconcile(ctx context.Context, req fleet.Request) (reconcile.Result, error) {
	if req.Name != "source" {
		return reconcile.Done(), nil
	}
	member := fleet.ClusterFrom(ctx)
	l, err := c.cms.In(req.Cluster)
	if err != nil {
		return reconcile.Done(), err
	}
	src, err := l.Get(req.Namespace, req.Name)
	if apierrors.IsNotFound(err) {
		return reconcile.Done(), nil
	}
	if err != nil {
		return reconcile.Done(), err
	}
	cp := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: "copy"}, Data: src.Data}
	w := member.Writer("copier")
	err = w.Create(ctx, cp)
	if apierrors.IsAlreadyExists(err) {
		err = w.Update(ctx, cp)
	}
	return reconcile.Done(), err
}

// runFleet starts f and a controller of c over it until the test ends.
func runFleet(t *testing.T, f *fleet.Fleet, cms *fleet.Lister[*corev1.ConfigMap]) {
	t.Helper()
	ctl, err := controller.New[fleet.Request]("copier", fleet.Reconciler(f, copier{cms}), controller.Options[fleet.Request]{
		Tenant: fleet.Request.Tenant,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := ctl.Watch(fleet.Watch(cms, fleet.EnqueueObject[*corev1.ConfigMap]())); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := f.Start(ctx); err != nil {
			t.Errorf("fleet: %v", err)
		}
	})
	wg.Go(func() {
		if err := ctl.Start(ctx); err != nil {
			t.Errorf("controller: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// member makes a namespace labelled as a member of the test's fleet, with
// a ConfigMap "source" holding v.
func member(t *testing.T, label string, v string) string {
	t.Helper()
	ns := env.Namespace(t)
	setLabel(t, ns, label)
	_, err := env.Client().CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "source"}, Data: map[string]string{"v": v},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

func setLabel(t *testing.T, ns, label string) {
	t.Helper()
	n, err := env.Client().CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	if label == "" {
		delete(n.Labels, "fleet-test")
	} else {
		n.Labels["fleet-test"] = label
	}
	if _, err := env.Client().CoreV1().Namespaces().Update(t.Context(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func setSource(t *testing.T, ns, v string) {
	t.Helper()
	cm, err := env.Client().CoreV1().ConfigMaps(ns).Get(t.Context(), "source", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{"v": v}
	if _, err := env.Client().CoreV1().ConfigMaps(ns).Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitCopy waits until ns's copy holds v.
func waitCopy(t *testing.T, ns, v string) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		cm, err := env.Client().CoreV1().ConfigMaps(ns).Get(ctx, "copy", metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = cm.Data["v"]
		return last == v, nil
	})
	if err != nil {
		t.Fatalf("copy in %s: %q, want %q: %v", ns, last, v, err)
	}
}

func waitEngaged(t *testing.T, f *fleet.Fleet, name string, engaged bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		_, err := f.Cluster(name)
		return (err == nil) == engaged, nil
	})
	if err != nil {
		t.Fatalf("member %s engaged: want %t: %v", name, engaged, err)
	}
}

// Namespaces matching the selector are members while they match: each
// reconciled with its own cache and client; a member unlabelled is
// disengaged at once and reconciled no more, and engaged anew when
// labelled again.
func TestNamespacesAsMembers(t *testing.T) {
	label := "members-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	sel := labels.SelectorFromSet(labels.Set{"fleet-test": label})
	f := newFleet(t, fleet.Options{Providers: []fleet.Provider{fleet.Namespaces{Config: env.Config(), Selector: sel}}})
	cms, err := fleet.Register[*corev1.ConfigMap](f, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := member(t, label, "a1"), member(t, label, "b1"), member(t, label, "c1")
	runFleet(t, f, cms)
	for ns, v := range map[string]string{a: "a1", b: "b1", c: "c1"} {
		waitCopy(t, ns, v)
	}
	got := f.Clusters()
	slices.Sort(got)
	want := []string{a, b, c}
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("members engaged (-want +got):\n%s", diff)
	}

	// Confined: a member's client writes its namespace only.
	m, err := f.Cluster(a)
	if err != nil {
		t.Fatal(err)
	}
	stray := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: b, Name: "stray"}}
	if err := m.Client().Create(t.Context(), stray); err == nil {
		t.Errorf("member %s's client created a ConfigMap in %s", a, b)
	}

	setLabel(t, a, "")
	waitEngaged(t, f, a, false)
	select {
	case <-m.Done():
	default:
		t.Errorf("member %s disengaged, but its Done is open", a)
	}
	if _, err := cms.In(a); !errors.Is(err, fleet.ErrNotEngaged) {
		t.Errorf("Lister.In(%s) once disengaged: %v, want ErrNotEngaged", a, err)
	}
	setSource(t, a, "a2")
	setSource(t, b, "b2")
	waitCopy(t, b, "b2")
	waitCopy(t, a, "a1") // not reconciled: no longer a member

	setLabel(t, a, label)
	waitEngaged(t, f, a, true)
	waitCopy(t, a, "a2")
}

// A kubeconfig in a labelled Secret engages a member reached with it; a
// kubeconfig changed to one that runs a command disengages it, with the
// refusal logged; the Secret deleted keeps it disengaged.
func TestKubeconfigSecrets(t *testing.T) {
	hub := env.Namespace(t)
	f := newFleet(t, fleet.Options{Providers: []fleet.Provider{fleet.KubeconfigSecrets{Config: env.Config(), Namespace: hub}}})
	cms, err := fleet.Register[*corev1.ConfigMap](f, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	runFleet(t, f, cms)

	secrets := env.Client().CoreV1().Secrets(hub)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "east"}, Data: map[string][]byte{"kubeconfig": testKubeconfig(t, nil)}}
	if _, err := secrets.Create(t.Context(), secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEngaged(t, f, "east", true)
	ns := env.Namespace(t)
	if _, err := env.Client().CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "source"}, Data: map[string]string{"v": "east"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCopy(t, ns, "east")

	secret.Data["kubeconfig"] = testKubeconfig(t, func(u *clientcmdapi.AuthInfo) {
		u.Exec = &clientcmdapi.ExecConfig{Command: "/bin/sh", Args: []string{"-c", "cat /var/run/secrets/kubernetes.io/serviceaccount/token"}, APIVersion: "client.authentication.k8s.io/v1"}
	})
	if _, err := secrets.Update(t.Context(), secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEngaged(t, f, "east", false)

	if err := secrets.Delete(t.Context(), "east", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Cluster("east"); !errors.Is(err, fleet.ErrNotEngaged) {
		t.Errorf("member east after its Secret's deletion: %v, want ErrNotEngaged", err)
	}
}

// testKubeconfig is a kubeconfig of the test control plane, credentials
// inline, after edit changes its user.
func testKubeconfig(t *testing.T, edit func(*clientcmdapi.AuthInfo)) []byte {
	t.Helper()
	rc := env.Config()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["env"] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthorityData: rc.CAData}
	user := &clientcmdapi.AuthInfo{ClientCertificateData: rc.CertData, ClientKeyData: rc.KeyData, Token: rc.BearerToken}
	if edit != nil {
		edit(user)
	}
	cfg.AuthInfos["env"] = user
	cfg.Contexts["env"] = &clientcmdapi.Context{Cluster: "env", AuthInfo: "env"}
	cfg.CurrentContext = "env"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A member that is not engaged is answered at once, everywhere.
func TestNotEngagedAnswersAtOnce(t *testing.T) {
	f := newFleet(t, fleet.Options{})
	cms, err := fleet.Register[*corev1.ConfigMap](f, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Cluster("gone"); !errors.Is(err, fleet.ErrNotEngaged) {
		t.Errorf("Cluster: %v, want ErrNotEngaged", err)
	}
	if _, err := cms.In("gone"); !errors.Is(err, fleet.ErrNotEngaged) {
		t.Errorf("Lister.In: %v, want ErrNotEngaged", err)
	}
	called := false
	r := fleet.Reconciler(f, reconcile.Func[fleet.Request](func(context.Context, fleet.Request) (reconcile.Result, error) {
		called = true
		return reconcile.Done(), nil
	}))
	res, err := r.Reconcile(t.Context(), fleet.Request{Cluster: "gone", Request: reconcile.Request{Namespace: "ns", Name: "a"}})
	if err != nil || !res.IsDone() || called {
		t.Errorf("reconcile of a key of a member not engaged: %v, %v, reconciler called %t; want it dropped", res, err, called)
	}
}

// A member's flood delays another member's key by one key at most: the
// queue's fairness keys on the member.
func TestFairAcrossMembers(t *testing.T) {
	q := queue.New(queue.Options[fleet.Request]{Tenant: fleet.Request.Tenant})
	defer q.ShutDown()
	for i := range 1000 {
		q.Add(fleet.Request{Cluster: "flood", Request: reconcile.Request{Namespace: "ns-" + strconv.Itoa(i%50), Name: strconv.Itoa(i)}})
	}
	quiet := fleet.Request{Cluster: "quiet", Request: reconcile.Request{Namespace: "ns", Name: "a"}}
	q.Add(quiet)
	for i := range 2 {
		k, _, _ := q.Get()
		q.Done(k)
		if k == quiet {
			return
		}
		if i == 1 {
			t.Errorf("the quiet member's key not among the first two of 1,001")
		}
	}
}

// A member disengaged releases what it ran: its informers, reflectors and
// handlers end (the HTTP connections its transport keeps idle aside, which
// client-go shares between clients of one config), and it keeps no
// writer.
func TestDisengagedMemberReleasesItsGoroutines(t *testing.T) {
	f := newFleet(t, fleet.Options{})
	cms, err := fleet.Register[*corev1.ConfigMap](f, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	runFleet(t, f, cms)
	ns := env.Namespace(t)
	if _, err := env.Client().CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "source"}, Data: map[string]string{"v": "1"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The controller starts its workers on a goroutine of its own: a
	// member reconciled first, and gone, makes sure they run before the
	// goroutines are counted, so that none of them is taken for the
	// member's.
	warmCtx, warmCancel := context.WithCancel(t.Context())
	warm := member(t, "", "w1")
	if err := f.Engage(warmCtx, fleet.Member{Name: "warm", Config: env.Config(), Namespace: warm}); err != nil {
		t.Fatal(err)
	}
	waitCopy(t, warm, "w1")
	warmCancel()
	waitEngaged(t, f, "warm", false)
	before := goleak.IgnoreCurrent()
	ctx, cancel := context.WithCancel(t.Context())
	if err := f.Engage(ctx, fleet.Member{Name: "m", Config: env.Config(), Namespace: ns}); err != nil {
		t.Fatal(err)
	}
	waitCopy(t, ns, "1")
	m := mustCluster(t, f, "m")
	if err := m.Writer("w").Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "written"}}); err != nil {
		t.Fatal(err)
	}
	if err := m.WriterAs("w", rest.ImpersonationConfig{UserName: "alice"}).Get(t.Context(), client.ObjectKey{Name: "source"}, &corev1.ConfigMap{}); !apierrors.IsForbidden(err) {
		t.Fatalf("get as alice: %v, want Forbidden", err)
	}
	cancel()
	waitEngaged(t, f, "m", false)
	if m.Writer("w") == m.Writer("w") {
		t.Errorf("a disengaged member keeps its writers")
	}
	goleak.VerifyNone(t, before,
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("golang.org/x/net/http2.(*ClientConn).readLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
}

// newFleet returns a new fleet, failing tb if it cannot.
func newFleet(tb testing.TB, opts fleet.Options) *fleet.Fleet {
	tb.Helper()
	f, err := fleet.New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

// A member whose API server does not answer is reported unreachable (its
// Health and its metric) while the other members go on; its keys are
// requeued, not reconciled, so no worker waits on it.
func TestUnreachableMemberIsReported(t *testing.T) {
	reg := prometheus.NewRegistry()
	f := newFleet(t, fleet.Options{ProbeInterval: 100 * time.Millisecond, Registerer: reg})
	cms, err := fleet.Register[*corev1.ConfigMap](f, cache.TypeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	runFleet(t, f, cms)
	good := member(t, "", "g1")
	if err := f.Engage(t.Context(), fleet.Member{Name: "good", Config: env.Config(), Namespace: good}); err != nil {
		t.Fatal(err)
	}
	dead := rest.CopyConfig(env.Config())
	dead.Host = "https://127.0.0.1:1" // nothing listens there
	if err := f.Engage(t.Context(), fleet.Member{Name: "dead", Config: dead, Namespace: "dead"}); err != nil {
		t.Fatal(err)
	}
	waitCopy(t, good, "g1")
	err = wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		c, err := f.Cluster("dead")
		return err == nil && !c.Health().Reachable, nil
	})
	if err != nil {
		t.Fatalf("the dead member never reported unreachable: %v", err)
	}
	c, _ := f.Cluster("dead")
	if h := c.Health(); h.Err == nil || h.Since.IsZero() {
		t.Errorf("the dead member's health: %+v, want the probe's error and when", h)
	}
	if h := mustCluster(t, f, "good").Health(); !h.Reachable {
		t.Errorf("the good member's health: %+v, want reachable", h)
	}
	want := `
# HELP opkit_fleet_member_reachable 1 if the member cluster's API server answered the fleet's last probe ready, else 0, by cluster.
# TYPE opkit_fleet_member_reachable gauge
opkit_fleet_member_reachable{cluster="dead"} 0
opkit_fleet_member_reachable{cluster="good"} 1
# HELP opkit_fleet_members Member clusters the fleet has engaged.
# TYPE opkit_fleet_members gauge
opkit_fleet_members 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), fleet.MetricMemberReachable, fleet.MetricMembers); err != nil {
		t.Error(err)
	}
	setSource(t, good, "g2")
	waitCopy(t, good, "g2")

	called := false
	r := fleet.Reconciler(f, reconcile.Func[fleet.Request](func(context.Context, fleet.Request) (reconcile.Result, error) {
		called = true
		return reconcile.Done(), nil
	}))
	res, err := r.Reconcile(t.Context(), fleet.Request{Cluster: "dead", Request: reconcile.Request{Namespace: "dead", Name: "source"}})
	if after, ok := res.Requeue(); err != nil || called || !ok || after != 100*time.Millisecond {
		t.Errorf("reconcile of the dead member's key: %v, %v, reconciler called %t; want it requeued after the probe interval", res, err, called)
	}
}

func mustCluster(t testing.TB, f *fleet.Fleet, name string) *fleet.Cluster {
	t.Helper()
	c, err := f.Cluster(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
