package mirror

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
)

// actor is what one reconcile of a Mirror reads its source and copies in
// full with, and writes its copies with: the Mirror's ServiceAccount
// (Reconciler.ActAs), or the operator itself.
type actor struct {
	// read returns the ConfigMap or Secret (by kind) namespace/name in
	// full; the caller does not modify it.
	read func(ctx context.Context, kind, namespace, name string) (client.Object, error)
	// fetch is read for a copy whose content is compared: the result is
	// the caller's, and never cached.
	fetch func(ctx context.Context, kind, namespace, name string) (client.Object, error)
	// writer creates and patches copies.
	writer client.Client
}

// actor returns the actor of a reconcile of m.
func (r *Reconciler) actor(m *v1alpha1.Mirror) actor {
	if r.ActAs == nil {
		return actor{read: r.Store.Object, fetch: r.Store.Fetch, writer: r.Client}
	}
	c := r.ActAs(m)
	get := func(ctx context.Context, kind, namespace, name string) (client.Object, error) {
		obj, err := newObject(kind)
		if err != nil {
			return nil, err
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
			return nil, err
		}
		return obj, nil
	}
	return actor{read: get, fetch: get, writer: c}
}

// newObject returns an empty ConfigMap or Secret, by kind.
func newObject(kind string) (client.Object, error) {
	switch kind {
	case v1alpha1.KindConfigMap:
		return &corev1.ConfigMap{}, nil
	case v1alpha1.KindSecret:
		return &corev1.Secret{}, nil
	}
	return nil, unknownKind(kind)
}

// serviceAccount is the ServiceAccount m acts as.
func serviceAccount(m *v1alpha1.Mirror) string {
	if m.Spec.ServiceAccountName == "" {
		return v1alpha1.DefaultServiceAccountName
	}
	return m.Spec.ServiceAccountName
}

// refusal is err's message, saying what to do when it is the API
// server's refusal to let the operator act as m's ServiceAccount. It names
// nothing outside the Mirror's namespace.
func refusal(m *v1alpha1.Mirror, err error) string {
	if !strings.Contains(err.Error(), "cannot impersonate") {
		return err.Error()
	}
	return fmt.Sprintf("%s; the operator may not act as ServiceAccount %s/%s: the namespace's owner allows it with a Role granting impersonate on serviceaccounts named %s, bound to the operator (docs/mirror-tenancy.md)",
		err, m.Namespace, serviceAccount(m), serviceAccount(m))
}
