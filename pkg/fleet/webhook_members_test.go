package fleet_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/cert"

	"github.com/opkit-dev/opkit/internal/freeport"
	"github.com/opkit-dev/opkit/pkg/fleet"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/testenv"
	"github.com/opkit-dev/opkit/pkg/webhook"
	"github.com/opkit-dev/opkit/pkg/webhook/requester"
)

// memberLabel marks the namespaces of a member whose webhook
// configurations select them; its value names the member whose path they
// call.
const memberLabel = "fleet-test.opkit.dev/webhooks"

// Two member API servers, each calling the operator's webhooks at its own
// path with a client certificate of its own CA: a user whom member a's
// RBAC lets read a Secret and member b's does not may make a ConfigMap that
// copies it on a, and is refused on b by b's RBAC, in a message naming b.
// b's API server sent to a's path is refused, and so are direct callers.
func TestWebhooksPerMemberCheckTheMembersRBAC(t *testing.T) {
	a, b := startMembers(t)
	caFile := joinFiles(t, a.Webhook().ClientCAFile, b.Webhook().ClientCAFile)
	callers, err := fleet.CallersByCA(map[string][]byte{"a": readFile(t, a.Webhook().ClientCAFile), "b": readFile(t, b.Webhook().ClientCAFile)})
	if err != nil {
		t.Fatal(err)
	}
	crt, key, err := cert.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	m, err := manager.New(env.Config(), manager.Options{
		Metrics: manager.MetricsOptions{BindAddress: "0"},
		Health:  manager.HealthOptions{BindAddress: "127.0.0.1:0"},
		Webhook: manager.WebhookOptions{Host: "127.0.0.1", Port: port, CertDir: certDir(t, crt, key), ClientCAFile: caFile},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := newFleet(t, fleet.Options{ProbeInterval: -1})
	reqs, err := fleet.NewRequesters(requester.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var s seen
	hooks := memberHooks(&s)
	hooks.Validator = webhook.ValidatorFuncs[*corev1.ConfigMap]{Create: func(ctx context.Context, cm *corev1.ConfigMap) (webhook.Warnings, error) {
		src, ok := cm.Data["copyFrom"]
		if !ok {
			return nil, nil
		}
		return nil, reqs.Check(ctx, requester.Permission{Verb: "get", Resource: "secrets", Namespace: cm.Namespace, Name: src})
	}}
	if err := fleet.RegisterWebhooks(m, f, hooks, fleet.WebhookOptions{Callers: callers}); err != nil {
		t.Fatal(err)
	}
	run(t, m.Start)
	run(t, f.Start)
	for name, e := range map[string]*testenv.Environment{"a": a, "b": b} {
		if err := f.Engage(t.Context(), fleet.Member{Name: name, Config: e.Config()}); err != nil {
			t.Fatal(err)
		}
	}

	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	// alice may create ConfigMaps in "team" on both members, and get the
	// Secret "shared" there on a only.
	copyCM := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}}}
	readShared := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: []string{"shared"}}
	setupMember(t, a, "a", base, crt, append(copyCM, readShared))
	setupMember(t, b, "b", base, crt, copyCM)
	// b's API server also calls a's path, for its namespace "cross".
	labelledNamespace(t, b, "cross", "a")
	installMemberWebhooks(t, b, "a", base+fleet.MemberPath("a", ""), crt)

	aliceOnA, aliceOnB := as(t, a, "alice"), as(t, b, "alice")
	cm := func(name string, data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name}, Data: data}
	}
	shared := map[string]string{"copyFrom": "shared"}
	var got *corev1.ConfigMap
	pollFor(t, "a's webhooks and RBAC to let alice copy shared", func(ctx context.Context) error {
		got, err = aliceOnA.CoreV1().ConfigMaps("team").Create(ctx, cm("copy", shared), metav1.CreateOptions{})
		return err
	})
	if got.Labels["member"] != "a" {
		t.Errorf("alice's ConfigMap on a: labels %v, want member=a (the defaulter's ClusterFrom)", got.Labels)
	}

	pollFor(t, "b's webhooks to label alice's ConfigMap", func(ctx context.Context) error {
		got, err = aliceOnB.CoreV1().ConfigMaps("team").Create(ctx, cm("plain", nil), metav1.CreateOptions{})
		return err
	})
	if got.Labels["member"] != "b" {
		t.Errorf("alice's ConfigMap on b: labels %v, want member=b", got.Labels)
	}
	_, err = aliceOnB.CoreV1().ConfigMaps("team").Create(t.Context(), cm("steal", shared), metav1.CreateOptions{})
	want := `configmaps "steal" is forbidden in member cluster "b": user "alice" may not get secrets "shared" in namespace "team"`
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("alice copying shared on b: %v, want Forbidden saying %q", err, want)
	}

	for _, m := range s.take() {
		if m != "a" && m != "b" {
			t.Errorf("a webhook ran with member %q, want a or b", m)
		}
	}
	_, err = b.Client().CoreV1().ConfigMaps("cross").Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "cross", Name: "x"}}, metav1.CreateOptions{})
	want = `member cluster "a": the caller is not its API server`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("b's API server calling a's path: %v, want refused saying %q", err, want)
	}
	if got := s.take(); len(got) != 0 {
		t.Errorf("b's API server calling a's path ran the webhooks with members %q", got)
	}

	forgedCallersAreRefused(t, base+fleet.MemberPath("a", webhook.ValidatePath(configMapKind)), crt)
}

// forgedCallersAreRefused posts a review to url directly: without a client
// certificate it is refused, and with one of another CA its TLS handshake
// fails.
func forgedCallersAreRefused(t *testing.T, url string, caBundle []byte) {
	t.Helper()
	stranger, strangerKey, err := cert.GenerateSelfSignedCertKey("stranger", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(stranger, strangerKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caBundle)
	for _, clientCert := range []*tls.Certificate{nil, &pair} {
		cfg := &tls.Config{RootCAs: pool}
		if clientCert != nil {
			cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return clientCert, nil }
		}
		tr := &http.Transport{TLSClientConfig: cfg}
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(string(admissionReview(t, "system:admin"))))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := (&http.Client{Transport: tr}).Do(req)
		tr.CloseIdleConnections()
		switch {
		case clientCert == nil && (err != nil || resp.StatusCode != http.StatusForbidden):
			t.Errorf("POST %s without a client certificate: %v, %v; want 403", url, resp, err)
		case clientCert != nil && err == nil:
			t.Errorf("POST %s with another CA's certificate: %d, want the TLS handshake to fail", url, resp.StatusCode)
		}
		if resp != nil {
			resp.Body.Close()
		}
	}
}

// startMembers starts two control planes whose API servers present a
// client certificate of a CA of their own to the webhooks they call.
func startMembers(t *testing.T) (a, b *testenv.Environment) {
	t.Helper()
	envs := make([]*testenv.Environment, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range envs {
		wg.Go(func() {
			envs[i], errs[i] = testenv.Start(testenv.Options{Webhook: testenv.WebhookOptions{ClientAuth: true}})
		})
	}
	wg.Wait()
	for i, e := range envs {
		if e != nil {
			t.Cleanup(func() {
				if err := e.Stop(); err != nil {
					t.Errorf("stop member %d: %v", i, err)
				}
			})
		}
	}
	for _, err := range errs {
		if err != nil {
			t.Fatalf("start a member control plane: %v", err)
		}
	}
	return envs[0], envs[1]
}

// setupMember makes e's namespace "team", whose webhooks call member's
// path, and lets alice do rules there.
func setupMember(t *testing.T, e *testenv.Environment, member, base string, caBundle []byte, rules []rbacv1.PolicyRule) {
	t.Helper()
	labelledNamespace(t, e, "team", member)
	installMemberWebhooks(t, e, member, base+fleet.MemberPath(member, ""), caBundle)
	rbac := e.Client().RbacV1()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "alice", Namespace: "team"}, Rules: rules}
	if _, err := rbac.Roles("team").Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice", Namespace: "team"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "alice"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}},
	}
	if _, err := rbac.RoleBindings("team").Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func labelledNamespace(t *testing.T, e *testenv.Environment, name, member string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{memberLabel: member}}}
	if _, err := e.Client().CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// installMemberWebhooks makes e's API server call prefix + the ConfigMap
// webhooks' paths for ConfigMaps written in namespaces labelled member,
// refusing writes when it cannot call them (failurePolicy Fail).
func installMemberWebhooks(t *testing.T, e *testenv.Environment, member, prefix string, caBundle []byte) {
	t.Helper()
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{memberLabel: member}}
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}
	client := func(path string) admissionregistrationv1.WebhookClientConfig {
		u := prefix + path
		return admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: caBundle}
	}
	name := "configmaps-" + member
	cs := e.Client().AdmissionregistrationV1()
	_, err := cs.MutatingWebhookConfigurations().Create(t.Context(), &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "default.configmaps.fleet.opkit.dev", ClientConfig: client(webhook.MutatePath(configMapKind)),
			Rules: rules, NamespaceSelector: selector, FailurePolicy: &fail, SideEffects: &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cs.ValidatingWebhookConfigurations().Create(t.Context(), &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "validate.configmaps.fleet.opkit.dev", ClientConfig: client(webhook.ValidatePath(configMapKind)),
			Rules: rules, NamespaceSelector: selector, FailurePolicy: &fail, SideEffects: &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// as returns a clientset of e acting as user.
func as(t *testing.T, e *testenv.Environment, user string) kubernetes.Interface {
	t.Helper()
	cfg := e.Config()
	cfg.Impersonate.UserName = user
	return kubernetes.NewForConfigOrDie(cfg)
}

// run runs start until the test ends, and fails the test if it fails.
func run(t *testing.T, start func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := start(ctx); err != nil {
			t.Errorf("Start: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// pollFor calls try until it succeeds, failing the test with its last
// error after two minutes.
func pollFor(t *testing.T, what string, try func(context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		last = try(ctx)
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last: %v)", what, err, last)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	p, err := freeport.Port()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func certDir(t *testing.T, crt, key []byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, b := range map[string][]byte{manager.WebhookCertFile: crt, manager.WebhookKeyFile: key} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// joinFiles writes the files' contents, one after another, into a new
// file and returns its path.
func joinFiles(t *testing.T, paths ...string) string {
	t.Helper()
	var all []byte
	for _, p := range paths {
		all = append(all, readFile(t, p)...)
	}
	out := filepath.Join(t.TempDir(), "joined.pem")
	if err := os.WriteFile(out, all, 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}
