package deployed

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
)

// TestForgedCallerGetsNothing sends the deployed operator's webhook port,
// as any pod that reaches it could, AdmissionReviews that name
// system:masters and other users: the answer is the same whether or not
// the Secret a Mirror names exists and whether or not any namespace
// accepts its copies, and a flood of them, each naming another user, makes
// the API server see no SubjectAccessReview, nor any other request that
// the reviews would cost.
func TestForgedCallerGetsNothing(t *testing.T) {
	d := render(t)
	id := d.apply(t, "forged")
	lease := leaseRef{namespace: id.namespace, name: "deployed-forged"}
	op := startOperator(t, opConfig{kubeconfig: writeKubeconfig(t, token(t, id, 3600)), lease: lease.name, leaseNS: lease.namespace})
	var addr string
	within(t, 2*time.Minute, "the webhook server to listen", func(*world) error {
		var err error
		addr, err = op.addr("webhook")
		return err
	}, nil)
	home := env.Namespace(t)
	ask := func(user authenticationv1.UserInfo) string {
		t.Helper()
		return forgedReview(t, "https://"+addr+"/validate-samples-opkit-dev-v1alpha1-mirror", home, user)
	}
	masters := authenticationv1.UserInfo{Username: "forged", Groups: []string{"system:masters"}}

	before := ask(masters)
	ctx := t.Context()
	admin := env.Client()
	if _, err := admin.CoreV1().Secrets(home).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: home, Name: "ops-only"},
		Type: corev1.SecretTypeBootstrapToken, StringData: map[string]string{"token-id": "abcdef"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	accepting := env.Namespace(t)
	p := fmt.Appendf(nil, `{"metadata":{"labels":{%q:"true","team":"a"}}}`, mirror.AcceptLabel(home))
	if _, err := admin.CoreV1().Namespaces().Patch(ctx, accepting, types.MergePatchType, p, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if after := ask(masters); after != before {
		t.Errorf("a forged caller learned that the Secret exists, or that a namespace accepts copies: before %s, after %s", before, after)
	}
	if strings.Contains(before, accepting) {
		t.Errorf("the answer names namespace %s: %s", accepting, before)
	}

	reviews := func() float64 { return apiServerRequests(t, "subjectaccessreviews") }
	start := reviews()
	for i := range 200 {
		ask(authenticationv1.UserInfo{Username: fmt.Sprintf("forged-%d", i), Groups: []string{"system:masters"}})
	}
	if n := reviews() - start; n != 0 {
		t.Errorf("200 forged reviews made the API server see %v SubjectAccessReviews, want none", n)
	}
}

// forgedReview posts an AdmissionReview of a Mirror in ns that copies the
// Secret ops-only to namespaces labelled team=a, naming user, to url, as a
// caller that trusts any certificate, and returns the response, the uid
// left out.
func forgedReview(t *testing.T, url, ns string, user authenticationv1.UserInfo) string {
	t.Helper()
	m := &v1alpha1.Mirror{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Mirror"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "exfiltrate"},
		Spec: v1alpha1.MirrorSpec{Source: v1alpha1.SourceRef{Kind: v1alpha1.KindSecret, Name: "ops-only"},
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}},
	}
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       "forged",
			Kind:      metav1.GroupVersionKind{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Kind: "Mirror"},
			Resource:  metav1.GroupVersionResource{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Resource: "mirrors"},
			Namespace: ns, Name: m.Name, Operation: admissionv1.Create, UserInfo: user,
			Object: runtime.RawExtension{Raw: raw},
		},
	}
	body, err := json.Marshal(review)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("post a forged review: %v", err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("forged review: %d %v: %s", resp.StatusCode, err, out)
	}
	return string(out)
}

// apiServerRequests sums apiserver_request_total of resource, from the API
// server's /metrics, read as the admin.
func apiServerRequests(t *testing.T, resource string) float64 {
	t.Helper()
	b, err := env.Client().CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `resource="`+resource+`"`) {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
			sum += v
		}
	}
	return sum
}
