package requester_test

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/opkit-dev/opkit/pkg/webhook"
	"github.com/opkit-dev/opkit/pkg/webhook/requester"
)

// A validator of ConfigMaps whose data.copyFrom names a Secret that the
// operator will read for whoever creates the ConfigMap: the creator must
// be allowed to get that Secret themselves. Register it with
// webhook.Register(mgr, webhook.Hooks[*corev1.ConfigMap]{Validator: v}),
// with a Checker made from mgr.UncachedClient().
func Example() {
	check, err := requester.New(apiServer(), requester.Options{})
	if err != nil {
		panic(err)
	}
	v := webhook.ValidatorFuncs[*corev1.ConfigMap]{
		Create: func(ctx context.Context, cm *corev1.ConfigMap) (webhook.Warnings, error) {
			src, ok := cm.Data["copyFrom"]
			if !ok {
				return nil, nil
			}
			// Check takes the user from the admission request in ctx.
			return nil, check.Check(ctx, requester.Permission{Verb: "get", Resource: "secrets", Namespace: cm.Namespace, Name: src})
		},
	}
	_ = v

	// CheckUser asks for a user given outside an admission request.
	alice := authenticationv1.UserInfo{Username: "alice"}
	fmt.Println(check.CheckUser(context.Background(), alice, requester.Permission{Verb: "get", Resource: "secrets", Namespace: "team-a", Name: "db"}))
	fmt.Println(check.CheckUser(context.Background(), alice, requester.Permission{Verb: "get", Resource: "secrets", Namespace: "team-a", Name: "ops-only"}))
	// Output:
	// <nil>
	// user "alice" may not get secrets "ops-only" in namespace "team-a", which it asks the operator to do on their behalf: ask for that permission (RBAC) or ask for less
}

// apiServer stands in for the API server's authorizer: alice may get every
// Secret in team-a but ops-only.
func apiServer() client.Client {
	return fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			sar := obj.(*authorizationv1.SubjectAccessReview)
			r := sar.Spec.ResourceAttributes
			sar.Status.Allowed = sar.Spec.User == "alice" && r.Namespace == "team-a" && r.Name != "ops-only"
			return nil
		},
	}).Build()
}
