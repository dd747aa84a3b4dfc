package deployed

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror/mirrortest"
)

// The Mirror workload: every behaviour of the operator, each step an action
// and what the operator must then make true. Every step runs for a
// ConfigMap Mirror and a Secret Mirror, so that every verb on both kinds is
// used.
var steps = []step{
	{"start", "the operator starts, syncs its caches and holds the Lease", nil, (*world).started},
	{"create", "a Mirror copies its source into each matching namespace and reports Ready", (*world).create, (*world).synced},
	{"update", "a change of the source reaches every copy", (*world).update, (*world).synced},
	{"recreate", "a deleted copy is created again", (*world).deleteCopy, (*world).synced},
	{"revert", "an edited copy is put back", (*world).editCopy, (*world).synced},
	{"match", "a namespace that starts matching gets a copy", (*world).match, (*world).synced},
	{"unmatch", "a namespace that stops matching loses its copy", (*world).unmatch, (*world).synced},
	{"collision", "an object the Mirror does not own is left alone, reported in status and a Warning Event", (*world).collide, (*world).conflicted},
	{"delete", "a deleted Mirror's copies go, then its finalizer", (*world).deleteMirrors, (*world).deleted},
	{"stop", "SIGTERM: the operator releases the Lease and exits 0", (*world).stop, (*world).released},
}

// step is one behaviour of the workload: do, then wait until done holds.
type step struct {
	name, behaviour string
	do              func(*world) error
	done            func(*world) error
}

var kinds = []string{v1alpha1.KindConfigMap, v1alpha1.KindSecret}

// source is the name of both sources and of their copies.
const source = "bundle"

// world drives one operator as a user would, through the admin client.
type world struct {
	t     testing.TB
	cl    client.Client
	op    *operator
	lease leaseRef
	home  string // the Mirrors and sources
	// matching, and by the collision step foreign, are the namespaces the
	// Mirrors select; unmatched are labelled no longer.
	matching, unmatched []string
	foreign             string
	label               map[string]string
	version             int
	scrapeToken         string // a metrics reader's
}

// leaseRef is a Lease's namespace and name.
type leaseRef struct{ namespace, name string }

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(s), v1alpha1.AddToScheme(s)); err != nil {
		panic(err)
	}
	return s
}

func newWorld(t testing.TB, lease leaseRef, scrapeToken string) *world {
	t.Helper()
	cl, err := client.New(env.Config(), client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, cl: cl, lease: lease, scrapeToken: scrapeToken}
	w.home = env.Namespace(t)
	w.label = map[string]string{"deployed-test": w.home}
	w.consent()
	// The control plane runs no namespace controller: what a run leaves
	// would be seen by the next run's operator.
	t.Cleanup(w.cleanUp)
	return w
}

// consent grants what home's owner and the targets' owners grant in
// production (docs/mirror-tenancy.md): the operator's ServiceAccounts may
// act as home's ServiceAccount mirror, by name, and that one may read and
// write ConfigMaps and Secrets.
func (w *world) consent() {
	w.t.Helper()
	ctx := context.Background()
	cs := env.Client()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.home, Name: "mirror-operator-acts-as-mirror"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"impersonate"}, ResourceNames: []string{v1alpha1.DefaultServiceAccountName}}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.home, Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:serviceaccounts:" + operatorNamespace}},
	}
	create(w.t, func() error {
		_, err := cs.RbacV1().Roles(w.home).Create(ctx, role, metav1.CreateOptions{})
		return err
	})
	create(w.t, func() error {
		_, err := cs.RbacV1().RoleBindings(w.home).Create(ctx, binding, metav1.CreateOptions{})
		return err
	})
	if err := mirrortest.GrantCopier(ctx, cs, w.home, v1alpha1.DefaultServiceAccountName); err != nil {
		w.t.Fatal(err)
	}
}

// operatorNamespace is the namespace config/default deploys the operator
// in (TestDeployedPermissionsSuffice checks).
const operatorNamespace = "mirror-system"

// run runs steps in order against op, waiting for each to be done.
func (w *world) run(op *operator, steps []step) {
	w.op = op
	for _, s := range steps {
		w.do(s)
		eventually(w.t, "step "+s.name+": "+s.behaviour, s.done, w)
	}
}

// do takes a step's action.
func (w *world) do(s step) {
	w.t.Helper()
	if s.do == nil {
		return
	}
	if err := s.do(w); err != nil {
		w.t.Fatalf("step %s: %v", s.name, err)
	}
}

// eventually polls cond until it holds, for at most a minute.
func eventually(t testing.TB, what string, cond func(*world) error, w *world) {
	t.Helper()
	within(t, time.Minute, what, cond, w)
}

// within polls cond until it holds, for at most d.
func within(t testing.TB, d time.Duration, what string, cond func(*world) error, w *world) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := cond(w)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s: %v", d, what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (w *world) started() error {
	if code, body, err := w.op.ready(); err != nil || code != 200 {
		return fmt.Errorf("/readyz: %d %s %v", code, body, err)
	}
	l := &coordinationv1.Lease{}
	if err := w.cl.Get(context.Background(), client.ObjectKey{Namespace: w.lease.namespace, Name: w.lease.name}, l); err != nil {
		return err
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return fmt.Errorf("lease %s/%s held by no one", l.Namespace, l.Name)
	}
	_, err := w.op.scrape(w.scrapeToken)
	return err
}

// namespace makes a namespace that accepts copies from the Mirrors of
// w.home, and that the Mirrors select if labelled.
func (w *world) namespace(labelled bool) (string, error) {
	ns := env.Namespace(w.t)
	patch := client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"metadata":{"labels":{%q:"true"}}}`, mirror.AcceptLabel(w.home)))
	if err := w.cl.Patch(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, patch); err != nil || !labelled {
		return ns, err
	}
	return ns, w.setLabel(ns, true)
}

func (w *world) setLabel(ns string, on bool) error {
	v := fmt.Sprintf("%q", w.home)
	if !on {
		v = "null"
	}
	patch := client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"metadata":{"labels":{"deployed-test":%s}}}`, v))
	return w.cl.Patch(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, patch)
}

func (w *world) data() map[string]string {
	return map[string]string{"ca.crt": fmt.Sprintf("version %d", w.version)}
}

func newObject(kind, ns string, data map[string]string) client.Object {
	meta := metav1.ObjectMeta{Name: source, Namespace: ns}
	if kind == v1alpha1.KindSecret {
		s := &corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	return &corev1.ConfigMap{ObjectMeta: meta, Data: data}
}

// get reads the object of kind in ns and its data.
func (w *world) get(kind, ns string) (client.Object, map[string]string, error) {
	obj := newObject(kind, ns, nil)
	if err := w.cl.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		return nil, nil, err
	}
	switch o := obj.(type) {
	case *corev1.Secret:
		data := map[string]string{}
		for k, v := range o.Data {
			data[k] = string(v)
		}
		return obj, data, nil
	case *corev1.ConfigMap:
		return obj, o.Data, nil
	}
	return nil, nil, fmt.Errorf("unknown kind %s", kind)
}

// put replaces the data of the object of kind in ns.
func (w *world) put(kind, ns string, data map[string]string) error {
	obj, _, err := w.get(kind, ns)
	if err != nil {
		return err
	}
	want := newObject(kind, ns, data)
	want.SetResourceVersion(obj.GetResourceVersion())
	want.SetLabels(obj.GetLabels())
	return w.cl.Update(context.Background(), want)
}

func (w *world) mirrorName(kind string) string { return "mirror-" + strings.ToLower(kind) }

func (w *world) create() error {
	w.version = 1
	for range 2 {
		ns, err := w.namespace(true)
		if err != nil {
			return err
		}
		w.matching = append(w.matching, ns)
	}
	for _, kind := range kinds {
		if err := w.cl.Create(context.Background(), newObject(kind, w.home, w.data())); err != nil {
			return err
		}
		m := &v1alpha1.Mirror{
			ObjectMeta: metav1.ObjectMeta{Name: w.mirrorName(kind), Namespace: w.home},
			Spec: v1alpha1.MirrorSpec{
				Source:            v1alpha1.SourceRef{Kind: kind, Name: source},
				NamespaceSelector: metav1.LabelSelector{MatchLabels: maps.Clone(w.label)},
			},
		}
		if err := w.cl.Create(context.Background(), m); err != nil {
			return err
		}
	}
	return nil
}

// synced checks that every matching namespace holds an up-to-date copy,
// every unmatched one none, and each Mirror reports Ready.
func (w *world) synced() error {
	var errs []error
	for _, kind := range kinds {
		for _, ns := range w.matching {
			if _, data, err := w.get(kind, ns); err != nil {
				errs = append(errs, err)
			} else if !maps.Equal(data, w.data()) {
				errs = append(errs, fmt.Errorf("%s %s/%s holds %v, want %v", kind, ns, source, data, w.data()))
			}
		}
		for _, ns := range w.unmatched {
			if _, _, err := w.get(kind, ns); !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("%s %s/%s: got %v, want it gone", kind, ns, source, err))
			}
		}
		errs = append(errs, w.condition(kind, metav1.ConditionTrue, v1alpha1.ReasonSynced))
	}
	return errors.Join(errs...)
}

func (w *world) condition(kind string, status metav1.ConditionStatus, reason string) error {
	m := &v1alpha1.Mirror{}
	if err := w.cl.Get(context.Background(), client.ObjectKey{Namespace: w.home, Name: w.mirrorName(kind)}, m); err != nil {
		return err
	}
	c := apimeta.FindStatusCondition(m.Status.Conditions, v1alpha1.ConditionReady)
	if c == nil || c.Status != status || c.Reason != reason || m.Status.ObservedGeneration != m.Generation {
		return fmt.Errorf("Mirror %s status %+v, want Ready=%s reason %s", m.Name, m.Status, status, reason)
	}
	return nil
}

func (w *world) update() error {
	w.version++
	for _, kind := range kinds {
		if err := w.put(kind, w.home, w.data()); err != nil {
			return err
		}
	}
	return nil
}

func (w *world) deleteCopy() error {
	for _, kind := range kinds {
		if err := w.cl.Delete(context.Background(), newObject(kind, w.matching[0], nil)); err != nil {
			return err
		}
	}
	return nil
}

func (w *world) editCopy() error {
	for _, kind := range kinds {
		if err := w.put(kind, w.matching[1], map[string]string{"ca.crt": "edited"}); err != nil {
			return err
		}
	}
	return nil
}

func (w *world) match() error {
	ns, err := w.namespace(false)
	if err == nil {
		err = w.setLabel(ns, true)
	}
	w.matching = append(w.matching, ns)
	return err
}

func (w *world) unmatch() error {
	ns := w.matching[1]
	w.matching = append(w.matching[:1], w.matching[2:]...)
	w.unmatched = append(w.unmatched, ns)
	return w.setLabel(ns, false)
}

func (w *world) collide() error {
	ns, err := w.namespace(false)
	if err != nil {
		return err
	}
	w.foreign = ns
	for _, kind := range kinds {
		if err := w.cl.Create(context.Background(), newObject(kind, ns, map[string]string{"mine": "yes"})); err != nil {
			return err
		}
	}
	return w.setLabel(ns, true)
}

// conflicted checks that each Mirror reports the foreign object in its
// status and a Warning Event, and left it alone.
func (w *world) conflicted() error {
	var errs []error
	for _, kind := range kinds {
		errs = append(errs, w.condition(kind, metav1.ConditionFalse, v1alpha1.ReasonConflict), w.event(kind))
		if _, data, err := w.get(kind, w.foreign); err != nil || !maps.Equal(data, map[string]string{"mine": "yes"}) {
			errs = append(errs, fmt.Errorf("the foreign %s in %s: %v, %v", kind, w.foreign, data, err))
		}
	}
	return errors.Join(errs...)
}

func (w *world) event(kind string) error {
	return w.eventWith(kind, v1alpha1.ReasonConflict, "")
}

// eventWith checks for a Warning Event with reason about the Mirror of
// kind whose note holds note.
func (w *world) eventWith(kind, reason, note string) error {
	evs := &eventsv1.EventList{}
	if err := w.cl.List(context.Background(), evs, client.InNamespace(w.home)); err != nil {
		return err
	}
	for _, e := range evs.Items {
		if e.Regarding.Name == w.mirrorName(kind) && e.Type == corev1.EventTypeWarning && e.Reason == reason && strings.Contains(e.Note, note) {
			return nil
		}
	}
	return fmt.Errorf("no Warning Event %s about Mirror %s that says %q", reason, w.mirrorName(kind), note)
}

// failed checks that the Mirror of kind reports a failed sync whose
// message holds what, in its Ready condition and in a Warning Event.
func (w *world) failed(kind, what string) error {
	m := &v1alpha1.Mirror{}
	if err := w.cl.Get(context.Background(), client.ObjectKey{Namespace: w.home, Name: w.mirrorName(kind)}, m); err != nil {
		return err
	}
	c := apimeta.FindStatusCondition(m.Status.Conditions, v1alpha1.ConditionReady)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonSyncFailed || !strings.Contains(c.Message, what) {
		return fmt.Errorf("Mirror %s status %+v, want Ready=False reason %s saying %q", m.Name, m.Status, v1alpha1.ReasonSyncFailed, what)
	}
	return w.eventWith(kind, v1alpha1.ReasonSyncFailed, what)
}

func (w *world) deleteMirrors() error {
	for _, kind := range kinds {
		m := &v1alpha1.Mirror{ObjectMeta: metav1.ObjectMeta{Namespace: w.home, Name: w.mirrorName(kind)}}
		if err := w.cl.Delete(context.Background(), m); err != nil {
			return err
		}
	}
	return nil
}

// deleted checks that the Mirrors and their copies are gone.
func (w *world) deleted() error {
	var errs []error
	for _, kind := range kinds {
		for _, ns := range w.matching {
			if _, _, err := w.get(kind, ns); !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("%s %s/%s: got %v, want it gone", kind, ns, source, err))
			}
		}
		err := w.cl.Get(context.Background(), client.ObjectKey{Namespace: w.home, Name: w.mirrorName(kind)}, &v1alpha1.Mirror{})
		if !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("Mirror %s: got %v, want it gone", w.mirrorName(kind), err))
		}
	}
	return errors.Join(errs...)
}

func (w *world) stop() error {
	if err := w.op.stop(); err != nil {
		return fmt.Errorf("the operator did not exit cleanly at SIGTERM: %w", err)
	}
	return nil
}

// released checks that the Lease is free for a standby, as ReleaseOnCancel
// promises.
func (w *world) released() error {
	l := &coordinationv1.Lease{}
	if err := w.cl.Get(context.Background(), client.ObjectKey{Namespace: w.lease.namespace, Name: w.lease.name}, l); err != nil {
		return err
	}
	if l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
		return fmt.Errorf("lease %s/%s still held by %s", l.Namespace, l.Name, *l.Spec.HolderIdentity)
	}
	return nil
}

// cleanUp removes the Mirrors (their finalizers first: the operator may be
// stopped or forbidden to) and every copy of them.
func (w *world) cleanUp() {
	ctx := context.Background()
	for _, kind := range kinds {
		m := &v1alpha1.Mirror{ObjectMeta: metav1.ObjectMeta{Namespace: w.home, Name: w.mirrorName(kind)}}
		patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`))
		if err := w.cl.Patch(ctx, m, patch); err != nil && !apierrors.IsNotFound(err) {
			w.t.Errorf("clean up: %v", err)
		}
		if err := w.cl.Delete(ctx, m); err != nil && !apierrors.IsNotFound(err) {
			w.t.Errorf("clean up: %v", err)
		}
	}
	copies := client.MatchingLabels{mirror.LabelMirrorNamespace: w.home}
	for _, list := range []client.ObjectList{&corev1.ConfigMapList{}, &corev1.SecretList{}} {
		w.deleteAll(list, copies)
	}
}

func (w *world) deleteAll(list client.ObjectList, sel client.MatchingLabels) {
	ctx := context.Background()
	if err := w.cl.List(ctx, list, sel); err != nil {
		w.t.Errorf("clean up: %v", err)
		return
	}
	_ = apimeta.EachListItem(list, func(o runtime.Object) error {
		if err := w.cl.Delete(ctx, o.(client.Object)); err != nil && !apierrors.IsNotFound(err) {
			w.t.Errorf("clean up: %v", err)
		}
		return nil
	})
}
