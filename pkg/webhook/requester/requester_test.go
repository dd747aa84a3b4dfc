package requester_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/opkit-dev/opkit/pkg/webhook/requester"
)

// authorizer is a fake API server's authorizer: it allows what allow says
// and counts the SubjectAccessReviews it answers.
type authorizer struct {
	allow   func(authorizationv1.SubjectAccessReviewSpec) bool
	reviews atomic.Int64
	fail    error
}

func (a *authorizer) client() client.Client {
	return fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			sar, ok := obj.(*authorizationv1.SubjectAccessReview)
			if !ok {
				return c.Create(ctx, obj, opts...)
			}
			a.reviews.Add(1)
			if a.fail != nil {
				return a.fail
			}
			sar.Status.Allowed = a.allow(sar.Spec)
			return nil
		},
	}).Build()
}

var alice = authenticationv1.UserInfo{Username: "alice", Groups: []string{"tenants", "system:authenticated"}}

func getSecret(ns, name string) requester.Permission {
	return requester.Permission{Verb: "get", Resource: "secrets", Namespace: ns, Name: name}
}

func createConfigMaps(ns string) requester.Permission {
	return requester.Permission{Verb: "create", Resource: "configmaps", Namespace: ns}
}

// aliceInTeamA allows alice everything in namespace team-a but Secret
// ops-only.
func aliceInTeamA(s authorizationv1.SubjectAccessReviewSpec) bool {
	r := s.ResourceAttributes
	return s.User == "alice" && r.Namespace == "team-a" && r.Name != "ops-only"
}

func TestCheckUser(t *testing.T) {
	for _, tc := range []struct {
		name    string
		perms   []requester.Permission
		denied  []string // substrings of the message, in order
		reviews int64
	}{
		{name: "allowed", perms: []requester.Permission{getSecret("team-a", "db"), createConfigMaps("team-a")}, reviews: 2},
		{name: "none asked", reviews: 0},
		{
			name:    "one missing",
			perms:   []requester.Permission{getSecret("team-a", "ops-only"), createConfigMaps("team-a")},
			denied:  []string{`user "alice" may not get secrets "ops-only" in namespace "team-a", which it asks the operator`},
			reviews: 2,
		},
		{
			name:    "each missing named",
			perms:   []requester.Permission{getSecret("team-a", "ops-only"), createConfigMaps("team-b"), {Verb: "list", Resource: "namespaces"}},
			denied:  []string{`get secrets "ops-only" in namespace "team-a", nor create configmaps in namespace "team-b", nor list namespaces cluster-wide`},
			reviews: 3,
		},
		{name: "repeats asked once", perms: []requester.Permission{createConfigMaps("team-a"), createConfigMaps("team-a")}, reviews: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &authorizer{allow: aliceInTeamA}
			c, err := requester.New(a.client(), requester.Options{})
			if err != nil {
				t.Fatal(err)
			}
			err = c.CheckUser(t.Context(), alice, tc.perms...)
			if got := a.reviews.Load(); got != tc.reviews {
				t.Errorf("SubjectAccessReviews: %d, want %d", got, tc.reviews)
			}
			if len(tc.denied) == 0 {
				if err != nil {
					t.Fatalf("CheckUser: %v, want nil", err)
				}
				return
			}
			var denied *requester.DeniedError
			if !errors.As(err, &denied) || !apierrors.IsForbidden(err) {
				t.Fatalf("CheckUser: %v, want a *DeniedError that is Forbidden", err)
			}
			for _, want := range tc.denied {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("message %q lacks %q", err, want)
				}
			}
		})
	}
}

func TestAnswersAreCachedForTTL(t *testing.T) {
	a := &authorizer{allow: aliceInTeamA}
	clk := clocktesting.NewFakePassiveClock(time.Now())
	c, err := requester.New(a.client(), requester.Options{TTL: 10 * time.Second, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	perms := []requester.Permission{getSecret("team-a", "db"), getSecret("team-a", "ops-only")}
	for range 5 {
		_ = c.CheckUser(t.Context(), alice, perms...)
	}
	if got := a.reviews.Load(); got != 2 {
		t.Fatalf("5 checks of 2 permissions within the TTL made %d SubjectAccessReviews, want 2", got)
	}
	// Another user, or the same name in other groups, is asked anew.
	_ = c.CheckUser(t.Context(), authenticationv1.UserInfo{Username: "alice", Groups: []string{"admins"}}, perms[0])
	if got := a.reviews.Load(); got != 3 {
		t.Fatalf("alice in other groups made %d SubjectAccessReviews in all, want 3", got)
	}
	clk.SetTime(clk.Now().Add(11 * time.Second))
	_ = c.CheckUser(t.Context(), alice, perms...)
	if got := a.reviews.Load(); got != 5 {
		t.Fatalf("after the TTL: %d SubjectAccessReviews in all, want 5", got)
	}
}

func TestTooManyPermissionsAskNothing(t *testing.T) {
	a := &authorizer{allow: func(authorizationv1.SubjectAccessReviewSpec) bool { return true }}
	c, err := requester.New(a.client(), requester.Options{MaxPermissions: 3})
	if err != nil {
		t.Fatal(err)
	}
	var perms []requester.Permission
	for i := range 4 {
		perms = append(perms, createConfigMaps(fmt.Sprint("ns-", i)))
	}
	err = c.CheckUser(t.Context(), alice, perms...)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "act in 4 ways on behalf of user \"alice\", more than the 3 it checks") {
		t.Fatalf("CheckUser of 4 permissions with MaxPermissions 3: %v", err)
	}
	if got := a.reviews.Load(); got != 0 {
		t.Errorf("%d SubjectAccessReviews, want none", got)
	}
}

func TestFailedReviewRefusesAndIsNotCached(t *testing.T) {
	a := &authorizer{allow: aliceInTeamA, fail: apierrors.NewServiceUnavailable("etcd down")}
	c, err := requester.New(a.client(), requester.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = c.CheckUser(t.Context(), alice, getSecret("team-a", "db"))
	var denied *requester.DeniedError
	if err == nil || errors.As(err, &denied) || !strings.Contains(err.Error(), "etcd down") {
		t.Fatalf("CheckUser with the API server failing: %v, want its error", err)
	}
	a.fail = nil
	if err := c.CheckUser(t.Context(), alice, getSecret("team-a", "db")); err != nil {
		t.Fatalf("CheckUser once the API server answers: %v", err)
	}
}

func TestCheckNamesTheRequestsObject(t *testing.T) {
	a := &authorizer{allow: aliceInTeamA}
	c, err := requester.New(a.client(), requester.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Check(t.Context(), getSecret("team-a", "db")); !errors.Is(err, requester.ErrNoRequest) {
		t.Fatalf("Check outside a webhook: %v, want ErrNoRequest", err)
	}
	ctx := admission.NewContextWithRequest(t.Context(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Resource: metav1.GroupVersionResource{Group: "samples.opkit.dev", Version: "v1alpha1", Resource: "mirrors"},
		Name:     "steal", Namespace: "team-a", UserInfo: alice,
	}})
	err = c.Check(ctx, getSecret("team-a", "ops-only"))
	want := `mirrors.samples.opkit.dev "steal" is forbidden: user "alice" may not get secrets "ops-only" in namespace "team-a"`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("Check: %v, want it to start %q", err, want)
	}
	if st := err.(*requester.DeniedError).Status(); st.Code != 403 || st.Reason != metav1.StatusReasonForbidden {
		t.Errorf("status %d %s, want 403 Forbidden", st.Code, st.Reason)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	if _, err := requester.New(nil, requester.Options{}); err == nil {
		t.Error("New(nil): no error")
	}
	a := &authorizer{}
	if _, err := requester.New(a.client(), requester.Options{TTL: -time.Second}); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("New with a negative TTL: %v", err)
	}
}

// A DeniedError of a member cluster's RBAC says which member, so that a
// user refused on one member knows where they lack the permission.
func TestDeniedErrorNamesTheMemberCluster(t *testing.T) {
	missing := []requester.Permission{{Verb: "get", Resource: "secrets", Namespace: "team-a", Name: "shared"}}
	for _, tt := range []struct {
		err  *requester.DeniedError
		want string
	}{
		{&requester.DeniedError{User: "alice", Resource: "configmaps", Name: "cm", Cluster: "eu-1", Missing: missing},
			`configmaps "cm" is forbidden in member cluster "eu-1": user "alice" may not get secrets "shared" in namespace "team-a"`},
		{&requester.DeniedError{User: "alice", Cluster: "eu-1", Missing: missing},
			`in member cluster "eu-1": user "alice" may not get secrets "shared" in namespace "team-a"`},
		{&requester.DeniedError{User: "alice", Resource: "configmaps", Name: "cm", Missing: missing},
			`configmaps "cm" is forbidden: user "alice" may not get secrets "shared" in namespace "team-a"`},
	} {
		if got := tt.err.Error(); !strings.HasPrefix(got, tt.want) {
			t.Errorf("Error() = %q, want it to start %q", got, tt.want)
		}
	}
}
