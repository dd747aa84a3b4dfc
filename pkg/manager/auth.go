package manager

import (
	"net/http"
	"strings"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// apiServerAuth lets a request through only if the API server authenticates
// its bearer token (TokenReview) and authorizes the token's user for the
// request's verb on its path as a non-resource URL (SubjectAccessReview),
// as the API server itself does for /metrics.
type apiServerAuth struct {
	clientset kubernetes.Interface
	next      http.Handler
	log       logr.Logger
}

func (a *apiServerAuth) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		http.Error(w, "Unauthorized: send a bearer token", http.StatusUnauthorized)
		return
	}
	tr, err := a.clientset.AuthenticationV1().TokenReviews().Create(r.Context(), &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token},
	}, metav1.CreateOptions{})
	if err != nil {
		a.log.Error(err, "TokenReview failed; does the operator's RBAC allow create on tokenreviews?")
		http.Error(w, "Internal Server Error: cannot review the token", http.StatusInternalServerError)
		return
	}
	if !tr.Status.Authenticated {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	u := tr.Status.User
	extra := make(map[string]authorizationv1.ExtraValue, len(u.Extra))
	for k, v := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := a.clientset.AuthorizationV1().SubjectAccessReviews().Create(r.Context(), &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra,
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: r.URL.Path, Verb: strings.ToLower(r.Method)},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		a.log.Error(err, "SubjectAccessReview failed; does the operator's RBAC allow create on subjectaccessreviews?")
		http.Error(w, "Internal Server Error: cannot authorize the request", http.StatusInternalServerError)
		return
	}
	if !sar.Status.Allowed {
		http.Error(w, "Forbidden: user "+u.Username+" may not "+strings.ToLower(r.Method)+" "+r.URL.Path, http.StatusForbidden)
		return
	}
	a.next.ServeHTTP(w, r)
}
