package mirror_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
	"github.com/opkit-dev/opkit/pkg/webhook"
)

// targetLabel selects a test's target namespaces by name.
const targetLabel = "mirror-test.opkit.dev/target"

// masters is a forged requester in the group that may do anything.
var masters = authenticationv1.UserInfo{Username: "kubernetes-admin", Groups: []string{"system:masters", "system:authenticated"}}

// Whoever reaches the webhook port can send it an AdmissionReview naming
// any user, system:masters included. The answer depends on the request's
// own object only: byte for byte the same whether or not the Secret it
// names exists (here, as another Mirror's copy of a type the Policy
// refuses) and whether or not a namespace it selects accepts copies; it
// names no namespace but the request's; and it costs no API request.
func TestForgedCallerLearnsNothing(t *testing.T) {
	h := serveWebhooks(t)
	victim, target := env.Namespace(t), env.Namespace(t)
	m := forgedMirror(victim, "token", target)
	old := m.DeepCopy()
	old.Spec.Source.Name = "before"
	ask := func() [][]byte {
		return [][]byte{
			h.reviewRaw(admissionv1.Create, victim, masters, m, nil),
			h.reviewRaw(admissionv1.Update, victim, masters, m, old),
		}
	}
	n := h.sent.count()
	before := ask()

	h.setLabels(target, map[string]string{targetLabel: target, mirror.AcceptLabel(victim): "true"})
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "token", Namespace: victim, Labels: map[string]string{
			mirror.LabelMirrorNamespace: "elsewhere", mirror.LabelMirrorName: "upstream",
		}},
		Type:       corev1.SecretTypeDockerConfigJson,
		StringData: map[string]string{corev1.DockerConfigJsonKey: `{"auths":{}}`},
	}
	if err := h.cl.Create(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	after := ask()

	for i, op := range []string{"create", "update"} {
		t.Logf("%s answered: %s", op, after[i])
		if !bytes.Equal(before[i], after[i]) {
			t.Errorf("the %s answer tells the forged caller whether Secret %s/token exists or %s accepts copies:\nwithout: %s\nwith:    %s",
				op, victim, target, before[i], after[i])
		}
		if bytes.Contains(after[i], []byte(target)) {
			t.Errorf("the %s answer names namespace %s: %s", op, target, after[i])
		}
	}
	if sent := h.sent.since(n); len(sent) > 0 {
		t.Errorf("answering the forged caller sent %d API requests, want none: %v", len(sent), sent)
	}
}

// A flood of forged requests, each naming another user, costs the
// operator no SubjectAccessReview and no API request at all.
func TestForgedFloodCostsNoAPIRequests(t *testing.T) {
	h := serveWebhooks(t)
	victim, target := env.Namespace(t), env.Namespace(t)
	h.setLabels(target, map[string]string{targetLabel: target, mirror.AcceptLabel(victim): "true"})
	const requests, workers = 200, 8
	n := h.sent.count()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < requests; i += workers {
				user := authenticationv1.UserInfo{Username: fmt.Sprintf("forged-%d", i), Groups: []string{"system:masters"}}
				req := h.reviewRequest(admissionv1.Create, victim, user, forgedMirror(victim, fmt.Sprintf("source-%d", i), target), nil)
				if _, err := h.post(req); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	sent := h.sent.since(n)
	sars := 0
	for _, s := range sent {
		if strings.Contains(s, "subjectaccessreviews") {
			sars++
		}
	}
	if len(sent) > 0 {
		t.Errorf("%d forged requests sent %d API requests (%d SubjectAccessReviews), want none; the first: %v",
			requests, len(sent), sars, sent[:min(len(sent), 5)])
	}
}

// A request whose object names another namespace than the request is
// refused, naming that namespace: only a forged request can send it.
func TestForgedRequestForAnotherNamespaceIsRefused(t *testing.T) {
	h := serveWebhooks(t)
	victim := env.Namespace(t)
	var resp admissionv1.AdmissionReview
	raw := h.reviewRaw(admissionv1.Create, h.ns, masters, forgedMirror(victim, "token"), nil)
	if err := json.Unmarshal(raw, &resp); err != nil {
		t.Fatal(err)
	}
	if r := resp.Response; r.Allowed || r.Result == nil || !strings.Contains(r.Result.Message, `namespace "`+victim+`"`) {
		t.Errorf("a request in namespace %s for a Mirror of namespace %s: %s, want a refusal naming %s", h.ns, victim, raw, victim)
	}
}

// forgedMirror is a Mirror in ns of Secret source into the namespaces
// targets.
func forgedMirror(ns, source string, targets ...string) *v1alpha1.Mirror {
	return &v1alpha1.Mirror{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Mirror"},
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns},
		Spec: v1alpha1.MirrorSpec{
			Source: v1alpha1.SourceRef{Kind: v1alpha1.KindSecret, Name: source},
			NamespaceSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: targetLabel, Operator: metav1.LabelSelectorOpIn, Values: targets},
			}},
		},
	}
}

// setLabels merges labels into namespace ns's.
func (h *hooked) setLabels(ns string, labels map[string]string) {
	h.t.Helper()
	obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":`+mustJSON(labels)+`}}`))
	if err := h.cl.Patch(h.t.Context(), obj, patch); err != nil {
		h.t.Fatal(err)
	}
}

// reviewRaw posts an AdmissionReview of op on m (old m on update) in
// namespace ns for user to the webhook server's validating path, as the
// API server would but with no client certificate, and returns the body
// of the answer.
func (h *hooked) reviewRaw(op admissionv1.Operation, ns string, user authenticationv1.UserInfo, m, old *v1alpha1.Mirror) []byte {
	h.t.Helper()
	b, err := h.post(h.reviewRequest(op, ns, user, m, old))
	if err != nil {
		h.t.Fatal(err)
	}
	return b
}

// reviewRequest is the AdmissionReview reviewRaw posts.
func (h *hooked) reviewRequest(op admissionv1.Operation, ns string, user authenticationv1.UserInfo, m, old *v1alpha1.Mirror) []byte {
	h.t.Helper()
	req := &admissionv1.AdmissionRequest{
		UID:       "forged",
		Kind:      metav1.GroupVersionKind{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Kind: "Mirror"},
		Resource:  metav1.GroupVersionResource{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Resource: "mirrors"},
		Name:      m.Name,
		Namespace: ns,
		Operation: op,
		UserInfo:  user,
		Object:    runtime.RawExtension{Raw: h.marshal(m)},
	}
	if old != nil {
		req.OldObject = runtime.RawExtension{Raw: h.marshal(old)}
	}
	return h.marshal(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Request:  req,
	})
}

// post sends review to the webhook server's validating path, from any
// goroutine, and returns the body of a 200 answer.
func (h *hooked) post(review []byte) ([]byte, error) {
	path := webhook.ValidatePath(v1alpha1.GroupVersion.WithKind("Mirror"))
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(h.ca)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(h.t.Context(), http.MethodPost, h.url+path, bytes.NewReader(review))
	if err != nil {
		return nil, fmt.Errorf("post a review: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("post a review: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read the answer to a review: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("POST %s: %s %s", path, resp.Status, b)
	}
	return b, nil
}

func (h *hooked) marshal(v any) []byte {
	h.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		h.t.Fatal(err)
	}
	return b
}
