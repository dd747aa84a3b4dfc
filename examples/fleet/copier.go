package main

import (
	"context"
	"fmt"
	"maps"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/fleet"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/reconcile"
	"github.com/opkit-dev/opkit/pkg/source"
)

// The labels and annotation the operator reads and writes.
const (
	// LabelCopy marks a ConfigMap of the hub's policy namespace to copy
	// into the members ("true").
	LabelCopy = "fleet.examples.opkit.dev/copy"
	// LabelAccept opts a member's namespace in to the copies ("true").
	LabelAccept = "fleet.examples.opkit.dev/accept"
	// LabelCopied marks a copy the operator made in a member ("true"): it
	// updates and deletes only ConfigMaps that carry it.
	LabelCopied = "fleet.examples.opkit.dev/copied"
	// AnnotationSource names a copy's ConfigMap on the hub, as
	// "namespace/name".
	AnnotationSource = "fleet.examples.opkit.dev/source"
)

// Copier copies the hub's policies (ConfigMaps labelled LabelCopy in its
// policy namespace) into every namespace labelled LabelAccept in every
// member, keeps the copies in step, and deletes a copy when its policy or
// its namespace's opt-in goes. Its keys are the copies: the member, the
// namespace and the policy's name.
type Copier struct {
	fleet    *fleet.Fleet
	policies *cache.Lister[*corev1.ConfigMap] // the hub's, in the manager's cache
	// policyNamespace is the hub namespace whose labelled ConfigMaps are
	// copied.
	policyNamespace string
	accepting       *fleet.Lister[*corev1.Namespace] // each member's, opted in only
	copies          *fleet.Lister[*corev1.ConfigMap] // each member's, copies only
	log             logr.Logger
}

var _ reconcile.Reconciler[fleet.Request] = (*Copier)(nil)

// Setup registers what the Copier reads: the hub's policies in mgr's
// cache, the accepting namespaces and the copies in every member of f;
// and adds f and the Copier's controller to mgr.
func Setup(mgr *manager.Manager, f *fleet.Fleet, policyNamespace string) error {
	c := &Copier{fleet: f, policyNamespace: policyNamespace, log: mgr.Logger().WithName("copier")}
	var err error
	c.policies, err = cache.Register[*corev1.ConfigMap](mgr.Cache(), cache.TypeOptions{
		Namespaces:    []string{policyNamespace},
		LabelSelector: labels.SelectorFromSet(labels.Set{LabelCopy: "true"}),
	})
	if err != nil {
		return fmt.Errorf("register the hub's policies: %w", err)
	}
	// Selected by label, each member's cache holds the namespaces that
	// opt in and the copies, not every namespace and ConfigMap: a
	// namespace that withdraws its opt-in leaves the cache, which is a
	// delete event.
	c.accepting, err = fleet.Register[*corev1.Namespace](f, cache.TypeOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{LabelAccept: "true"}),
	})
	if err != nil {
		return err
	}
	c.copies, err = fleet.Register[*corev1.ConfigMap](f, cache.TypeOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{LabelCopied: "true"}),
	})
	if err != nil {
		return err
	}
	ctl, err := controller.New[fleet.Request]("fleet-copier", fleet.Reconciler(f, c), controller.Options[fleet.Request]{
		Tenant: fleet.Request.Tenant, // fair across members
		Logger: mgr.Logger(),
	})
	if err != nil {
		return err
	}
	for _, src := range []source.Source[fleet.Request]{
		source.NewKind(c.policies, source.EnqueueMapped(c.copiesOf)),
		fleet.Watch(c.accepting, fleet.EnqueueMapped(c.copiesIn)),
		fleet.Watch(c.copies, fleet.EnqueueObject[*corev1.ConfigMap]()),
	} {
		if err := ctl.Watch(src); err != nil {
			return err
		}
	}
	if err := mgr.Add(f); err != nil {
		return err
	}
	return mgr.Add(ctl)
}

// copiesOf maps a policy on the hub to its copies: one in each accepting
// namespace of each engaged member. A member engaged later, or whose
// cache has not synced yet, is covered by copiesIn when its namespaces
// arrive.
func (c *Copier) copiesOf(policy *corev1.ConfigMap) []fleet.Request {
	var out []fleet.Request
	for _, member := range c.fleet.Clusters() {
		l, err := c.accepting.In(member)
		if err != nil {
			continue // disengaged meanwhile
		}
		namespaces, err := l.List("", nil)
		if err != nil {
			continue // not synced: its namespaces' events will come
		}
		for _, ns := range namespaces {
			out = append(out, key(member, ns.Name, policy.Name))
		}
	}
	return out
}

// copiesIn maps an accepting namespace of a member to the copies every
// policy has there.
func (c *Copier) copiesIn(member string, ns *corev1.Namespace) []fleet.Request {
	policies, err := c.policies.List(c.policyNamespace, nil)
	if err != nil {
		c.log.Error(err, "Cannot list the hub's policies")
		return nil
	}
	out := make([]fleet.Request, 0, len(policies))
	for _, p := range policies {
		out = append(out, key(member, ns.Name, p.Name))
	}
	return out
}

func key(member, namespace, name string) fleet.Request {
	return fleet.Request{Cluster: member, Request: reconcile.Request{Namespace: namespace, Name: name}}
}

// Reconcile makes the copy req names match its policy: created or updated
// while the policy exists and the namespace accepts, deleted otherwise.
// A ConfigMap of the copy's name that the operator did not make is left
// untouched.
func (c *Copier) Reconcile(ctx context.Context, req fleet.Request) (reconcile.Result, error) {
	want, err := c.desired(req)
	if err != nil {
		return reconcile.Done(), err
	}
	copies, err := c.copies.In(req.Cluster)
	if err != nil {
		return reconcile.Done(), err
	}
	have, err := copies.Get(req.Namespace, req.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Done(), err
	}
	member := fleet.ClusterFrom(ctx).Client()
	switch {
	case want == nil && err != nil:
		return reconcile.Done(), nil
	case want == nil:
		return reconcile.Done(), deleteCopy(ctx, member, have)
	case err != nil:
		return reconcile.Done(), c.create(ctx, member, req, want)
	}
	return reconcile.Done(), update(ctx, member, have, want)
}

// desired returns the copy req names as it should be, or nil if there
// should be none. The maps are the copy's own: the policy is the cache's.
func (c *Copier) desired(req fleet.Request) (*corev1.ConfigMap, error) {
	policy, err := c.policies.Get(c.policyNamespace, req.Name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	accepting, err := c.accepting.In(req.Cluster)
	if err != nil {
		return nil, err
	}
	if _, err := accepting.Get("", req.Namespace); apierrors.IsNotFound(err) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   req.Namespace,
			Name:        req.Name,
			Labels:      map[string]string{LabelCopied: "true"},
			Annotations: map[string]string{AnnotationSource: policy.Namespace + "/" + policy.Name},
		},
		Data:       maps.Clone(policy.Data),
		BinaryData: maps.Clone(policy.BinaryData),
	}, nil
}

// create creates want; if a ConfigMap of its name exists that the cache
// has not shown, it is updated if it is a copy and left alone if not.
func (c *Copier) create(ctx context.Context, member client.Client, req fleet.Request, want *corev1.ConfigMap) error {
	err := member.Create(ctx, want)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	have := &corev1.ConfigMap{}
	if err := member.Get(ctx, client.ObjectKeyFromObject(want), have); err != nil {
		return err
	}
	if have.Labels[LabelCopied] != "true" {
		c.log.Info("Left a ConfigMap the operator did not make untouched", "cluster", req.Cluster, "namespace", req.Namespace, "name", req.Name)
		return nil
	}
	return update(ctx, member, have, want)
}

// update makes have, a copy, hold want's data, unless it does.
func update(ctx context.Context, member client.Client, have, want *corev1.ConfigMap) error {
	if maps.Equal(have.Data, want.Data) && equalBinary(have.BinaryData, want.BinaryData) &&
		have.Annotations[AnnotationSource] == want.Annotations[AnnotationSource] {
		return nil
	}
	u := have.DeepCopy() // have may be the cache's
	u.Data, u.BinaryData = want.Data, want.BinaryData
	if u.Annotations == nil {
		u.Annotations = map[string]string{}
	}
	u.Annotations[AnnotationSource] = want.Annotations[AnnotationSource]
	return member.Update(ctx, u)
}

// deleteCopy deletes have if it is still the object the cache showed.
func deleteCopy(ctx context.Context, member client.Client, have *corev1.ConfigMap) error {
	uid, rv := have.UID, have.ResourceVersion
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: have.Namespace, Name: have.Name}}
	err := member.Delete(ctx, cm, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	return client.IgnoreNotFound(err)
}

func equalBinary(a, b map[string][]byte) bool {
	return maps.EqualFunc(a, b, func(x, y []byte) bool { return string(x) == string(y) })
}
