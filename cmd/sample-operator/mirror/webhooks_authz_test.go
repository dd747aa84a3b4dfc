package mirror_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
	"github.com/opkit-dev/opkit/pkg/webhook"
)

// targetLabel selects a test's target namespaces by name.
const targetLabel = "mirror-test.opkit.dev/target"

// A tenant may make the operator copy only what she may read, only into
// namespaces where she may write: through the API server, as a user with
// real RBAC, the Validator refuses a Mirror of a Secret she may not get
// (naming that permission) and a Mirror whose targets include a namespace
// where she may not write (naming it), on create and on an update of the
// selector; with the permissions, her Mirror is admitted. A namespace the
// selector matches but that has not opted in is no target and needs no
// permission.
func TestWebhooksRefuseWhatTheRequesterMayNotDo(t *testing.T) {
	h := serveWebhooks(t)
	h.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ops-only"}, StringData: map[string]string{"token": "ops"}})
	h.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shared"}, StringData: map[string]string{"token": "shared"}})
	open := h.target(true)      // she may read and write Secrets there
	closed := h.target(true)    // she may only read Secrets there
	optedOut := h.target(false) // matched, but accepts no copies
	user := "tenant-" + h.ns
	grant(t, h.ns, user,
		rbacv1.PolicyRule{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"mirrors"}, Verbs: []string{"create", "update", "patch"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: []string{"shared"}},
	)
	grant(t, open, user, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "create", "patch", "delete"}})
	grant(t, closed, user, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}})
	tenant := impersonating(t, user)

	allowed := h.secretMirror("allowed", "shared", open, optedOut)
	poll(t, "the tenant's Mirror of a Secret she may get, into a namespace where she may write, to be admitted", func() error {
		return tenant.Create(t.Context(), allowed.DeepCopy(), client.DryRunAll)
	})
	if err := tenant.Create(t.Context(), allowed); err != nil {
		t.Fatalf("the tenant's Mirror of Secret shared into %s: %v", open, err)
	}

	deny := func(t *testing.T, err error, wants ...string) {
		t.Helper()
		if !apierrors.IsForbidden(err) {
			t.Fatalf("got %v, want Forbidden", err)
		}
		says(t, err.Error(), wants...)
	}
	prefix := `admission webhook "validate.mirrors.samples.opkit.dev" denied the request: mirrors.samples.opkit.dev `
	t.Run("source she may not get", func(t *testing.T) {
		err := tenant.Create(t.Context(), h.secretMirror("steal", "ops-only", open))
		deny(t, err, prefix+`"steal" is forbidden: user "`+user+`" may not get secrets "ops-only" in namespace "`+h.ns+`"`)
		if strings.Contains(err.Error(), open) {
			t.Errorf("refusal %q names %s, where she may write", err, open)
		}
	})
	t.Run("target where she may not write", func(t *testing.T) {
		err := tenant.Create(t.Context(), h.secretMirror("wide", "shared", open, closed))
		deny(t, err, prefix+`"wide" is forbidden: user "`+user+`" may not `,
			`create secrets in namespace "`+closed+`"`,
			`patch secrets "shared" in namespace "`+closed+`"`,
			`delete secrets "shared" in namespace "`+closed+`"`)
	})
	t.Run("selector widened on update", func(t *testing.T) {
		patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"namespaceSelector":{"matchExpressions":[{"key":"`+
			targetLabel+`","operator":"In","values":["`+open+`","`+closed+`"]}]}}}`))
		err := tenant.Patch(t.Context(), allowed.DeepCopy(), patch)
		deny(t, err, `create secrets in namespace "`+closed+`"`)
	})
	t.Run("kind omitted", func(t *testing.T) {
		// The Defaulter would say whether a ConfigMap or Secret of the name
		// exists: it refuses alike whether it does or not.
		var msgs []string
		for _, name := range []string{"ops-only", "no-such-source"} {
			m := h.secretMirror("guess", name, open)
			m.Spec.Source.Kind = ""
			err := tenant.Create(t.Context(), m, client.DryRunAll)
			if !apierrors.IsForbidden(err) {
				t.Fatalf("Mirror of %q without a kind: %v, want Forbidden", name, err)
			}
			msgs = append(msgs, strings.ReplaceAll(err.Error(), name, "NAME"))
		}
		t.Logf("refused as: %s", msgs[0])
		if msgs[0] != msgs[1] {
			t.Errorf("the refusal tells an existing source from a missing one:\n%s\n%s", msgs[0], msgs[1])
		}
		says(t, msgs[0], `admission webhook "default.mirrors.samples.opkit.dev" denied the request: `, `may not get configmaps "NAME" in namespace "`+h.ns+`", nor get secrets "NAME"`)
	})
}

// Whoever reaches the webhook port can send it an AdmissionReview, naming
// any namespace and user. Sent by a stranger as herself (anonymous), the
// hooks answer her the same whether or not a Secret of the name exists:
// they check her permissions before they look, and she has none. A
// request whose object names another namespace than the request is
// refused.
func TestWebhooksAreNoOracle(t *testing.T) {
	h := serveWebhooks(t)
	victim := env.Namespace(t)
	stranger := authenticationv1.UserInfo{Username: "system:anonymous", Groups: []string{"system:unauthenticated"}}
	unnamed := func(name, kind string) *v1alpha1.Mirror {
		return &v1alpha1.Mirror{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Mirror"},
			ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: victim},
			Spec:       v1alpha1.MirrorSpec{Source: v1alpha1.SourceRef{Kind: kind, Name: name}},
		}
	}
	gvk := v1alpha1.GroupVersion.WithKind("Mirror")
	mutate := func() admissionv1.AdmissionResponse {
		return h.review(webhook.MutatePath(gvk), victim, stranger, unnamed("token", ""))
	}
	validate := func() admissionv1.AdmissionResponse {
		return h.review(webhook.ValidatePath(gvk), victim, stranger, unnamed("token", v1alpha1.KindSecret))
	}
	beforeM, beforeV := mutate(), validate()
	// A copy, which the Validator would refuse as a source.
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "token", Namespace: victim, Labels: map[string]string{
		mirror.LabelMirrorNamespace: "elsewhere", mirror.LabelMirrorName: "upstream",
	}}}
	if err := h.cl.Create(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	afterM, afterV := mutate(), validate()
	same := func(hook string, before, after admissionv1.AdmissionResponse) {
		t.Helper()
		b, _ := json.Marshal(before)
		a, _ := json.Marshal(after)
		if !bytes.Equal(a, b) {
			t.Errorf("the %s webhook tells the stranger whether Secret %s/token exists:\nwithout: %s\nwith:    %s", hook, victim, b, a)
		}
		if after.Allowed || after.Result == nil || after.Result.Code != http.StatusForbidden {
			t.Errorf("the %s webhook answered the stranger %s, want a 403 refusal", hook, a)
		}
	}
	same("mutating", beforeM, afterM)
	same("validating", beforeV, afterV)

	t.Run("object in another namespace than the request", func(t *testing.T) {
		for path, m := range map[string]*v1alpha1.Mirror{
			webhook.MutatePath(gvk):   unnamed("token", ""),
			webhook.ValidatePath(gvk): unnamed("token", v1alpha1.KindSecret),
		} {
			resp := h.review(path, h.ns, stranger, m)
			if resp.Allowed || resp.Result == nil || !strings.Contains(resp.Result.Message, `namespace "`+victim+`"`) {
				t.Errorf("%s: a request in namespace %s for a Mirror of namespace %s: %+v, want a refusal naming %s", path, h.ns, victim, resp.Result, victim)
			}
		}
	})
}

// The Validator applies the operator's Policy at admission, with kubectl
// as a user sees it: a Secret of a type the cluster acts on is refused as
// a source, naming the flag that allows it; a selector that matches more
// namespaces accepting copies than --max-targets is warned about.
func TestWebhooksApplyThePolicy(t *testing.T) {
	h := serveWebhooksWith(t, mirror.Policy{MaxTargets: 1})
	h.create(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "pull"},
		Type:       corev1.SecretTypeDockerConfigJson,
		StringData: map[string]string{corev1.DockerConfigJsonKey: `{"auths":{}}`},
	})
	h.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}})
	group := `{"mirror-test.opkit.dev/group": "` + h.ns + `"}`
	for range 2 {
		ns := h.target(true)
		obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":`+group+`}}`))
		if err := h.cl.Patch(t.Context(), obj, patch); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("secret type refused", func(t *testing.T) {
		out, ok := h.run(h.mirrorYAML("pull", "Secret", "pull", group), "create", "-f", "-")
		want := `The Mirror "pull" is invalid: spec.source.name: Forbidden: source Secret ` + h.ns + `/pull has type kubernetes.io/dockerconfigjson, ` +
			`which is not copied unless the operator runs with --allow-secret-types=kubernetes.io/dockerconfigjson`
		if ok || !strings.Contains(out, want) {
			t.Errorf("kubectl create printed:\n%s\nwant a refusal with:\n%s", out, want)
		}
	})
	t.Run("fan-out over --max-targets warned", func(t *testing.T) {
		out, ok := h.run(h.mirrorYAML("wide", "ConfigMap", "settings", group), "create", "-f", "-")
		want := "Warning: spec.namespaceSelector matches more namespaces that accept copies than the operator copies into (--max-targets=1): only the first 1, by name, get copies"
		if !ok || !strings.Contains(out, want) {
			t.Errorf("kubectl create printed:\n%s\nwant success with:\n%s", out, want)
		}
	})
}

// target makes a namespace that the hooked namespace's Mirrors may select
// by targetLabel, opted in to them if accept.
func (h *hooked) target(accept bool) string {
	h.t.Helper()
	ns := env.Namespace(h.t)
	labels := map[string]string{targetLabel: ns}
	if accept {
		labels[mirror.AcceptLabel(h.ns)] = "true"
	}
	obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":`+mustJSON(labels)+`}}`))
	if err := h.cl.Patch(h.t.Context(), obj, patch); err != nil {
		h.t.Fatal(err)
	}
	return ns
}

// secretMirror is a Mirror in the hooked namespace of Secret source into
// the namespaces targets.
func (h *hooked) secretMirror(name, source string, targets ...string) *v1alpha1.Mirror {
	return &v1alpha1.Mirror{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns},
		Spec: v1alpha1.MirrorSpec{
			Source: v1alpha1.SourceRef{Kind: v1alpha1.KindSecret, Name: source},
			NamespaceSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: targetLabel, Operator: metav1.LabelSelectorOpIn, Values: targets},
			}},
		},
	}
}

// review posts an AdmissionReview creating m in namespace ns for user to
// the webhook server at path, as the API server would but with no client
// certificate, and returns the response.
func (h *hooked) review(path, ns string, user authenticationv1.UserInfo, m *v1alpha1.Mirror) admissionv1.AdmissionResponse {
	h.t.Helper()
	raw, err := json.Marshal(m)
	if err != nil {
		h.t.Fatal(err)
	}
	body, err := json.Marshal(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       "forged",
			Kind:      metav1.GroupVersionKind{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Kind: "Mirror"},
			Resource:  metav1.GroupVersionResource{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Resource: "mirrors"},
			Name:      m.Name,
			Namespace: ns,
			Operation: admissionv1.Create,
			UserInfo:  user,
			Object:    runtime.RawExtension{Raw: raw},
		},
	})
	if err != nil {
		h.t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(h.ca)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	req, err := http.NewRequestWithContext(h.t.Context(), http.MethodPost, h.url+path, bytes.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		h.t.Fatalf("POST %s: %s %s (%v)", path, resp.Status, b, err)
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(b, &out); err != nil || out.Response == nil {
		h.t.Fatalf("POST %s answered %s (%v)", path, b, err)
	}
	return *out.Response
}

// grant binds user to a Role of rules in ns.
func grant(t *testing.T, ns, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	rbac := env.Client().RbacV1()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns}, Rules: rules}
	if _, err := rbac.Roles(ns).Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := rbac.RoleBindings(ns).Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// impersonating returns a client of the test control plane acting as user.
func impersonating(t *testing.T, user string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	cl, err := client.New(cfg, client.Options{Scheme: newScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// poll calls cond until it returns nil, failing the test with its last
// error after a minute.
func poll(t *testing.T, what string, cond func() error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		last = cond()
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last: %v)", what, err, last)
	}
}

// says fails t unless msg contains each of wants.
func says(t *testing.T, msg string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal %q\ndoes not say %q", msg, want)
		}
	}
}
