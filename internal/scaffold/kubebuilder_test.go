package scaffold

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/cert"

	"github.com/opkit-dev/opkit/internal/freeport"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

// TestFromKubebuilder ports testdata/kubebuilder, a small project laid out
// as kubebuilder 4 lays one out, and runs the port on a control plane:
// its reconciler, unchanged, writes a Guest's ConfigMap through opkit's
// manager and cached client, reading a kind it does not watch.
func TestFromKubebuilder(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds a ported project and runs it on a control plane")
	}
	src, err := filepath.Abs("testdata/kubebuilder")
	if err != nil {
		t.Fatal(err)
	}
	before := tree(t, src)
	dir := t.TempDir()
	res, err := FromKubebuilder(t.Context(), dir, FromKubebuilderOptions{Source: src, OpkitReplace: opkitRoot(t)})
	if err != nil {
		t.Fatal(err)
	}
	checkUnchanged(t, src, before)
	report, err := os.ReadFile(filepath.Join(dir, reportFile))
	if err != nil {
		t.Fatal(err)
	}
	if res.Needs != 0 {
		t.Errorf("%d items need a hand, want none:\n%s", res.Needs, report)
	}
	for _, want := range []string{
		"`PROJECT:22`: resources[0] guestbook/v1 Guest webhooks.defaultingPath: /custom-default-guest: served at the same path (crport.Paths)",
		"`cmd/main.go:51`: flag --greeting: parsed as before and passed on as main passed it",
		"`internal/controller/guest_controller.go:44`: GuestReconciler reads *corev1.Namespace: registered with the cache in SetupWithOpkit",
		"`internal/controller/guest_controller.go:89`: GuestReconciler SetupWithManager Watches(*corev1.Secret): manager.Watches[*corev1.Secret]",
		"`Makefile:8`: setup-envtest use: go tool opkit envtest",
		"`cmd/main.go:90`: if err := controller.SetupIndexes(ctx, mgr.GetFieldIndexer()); err != nil {: kept in setup, on opkit's manager",
		"`internal/controller/suite_test.go:48`: ctrl.NewManager: manager.New: the suite runs the ported controllers and webhooks on opkit's manager",
		"`internal/controller/suite_test.go:59`: SetupWithManager of reconciler: SetupWithOpkit",
		"`cmd/main.go:111`: func setupWebhooks: setupWebhooksWithOpkit, on opkit's manager, in main_opkit.go",
		"`cmd/main.go:118`: func setupChecks: setupChecksWithOpkit, on opkit's manager, in main_opkit.go",
		"`internal/controller/guest_controller.go:85`: GuestReconciler: Listers of *guestbookv1.Guest, *corev1.ConfigMap, *corev1.Secret, *corev1.Namespace in place of the cached client's reads",
	} {
		if !strings.Contains(string(report), want) {
			t.Errorf("%s lacks %q:\n%s", reportFile, want, report)
		}
	}

	env, err := testenv.Start(testenv.Options{CRDDirs: []string{filepath.Join(dir, "config/crd/bases")}, StartTimeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	// The project's own suite, rewritten onto opkit's manager, runs its
	// reconciler there (before the ported binary, which would reconcile
	// the suite's Guest too).
	suite := projectCommand(t, dir, "go", "test", "-count=1", "-v", "-run", "TestGuestReconciler", "./internal/controller/")
	suite.Env = append(suite.Env, "USE_EXISTING_CLUSTER=true", "KUBECONFIG="+kubeconfig)
	if out, err := suite.CombinedOutput(); err != nil || !strings.Contains(string(out), "--- PASS: TestGuestReconciler") {
		t.Errorf("the ported suite: %v\n%s", err, out)
	}
	inProject(t, dir, "go", "build", "-o", "bin/manager", "./cmd")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	port, err := freeport.Port()
	if err != nil {
		t.Fatal(err)
	}
	certs := t.TempDir()
	crt, key, err := cert.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"tls.crt": crt, "tls.key": key} {
		if err := os.WriteFile(filepath.Join(certs, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "bin/manager"), "--kubeconfig", kubeconfig, "--health-probe-bind-address", "0",
		"--greeting", "Welcome", "--webhook-port", strconv.Itoa(port), "--webhook-cert-path", certs)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	var stderr lockedBuffer // written by exec's copying goroutine while the test reads it
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		if err := <-exited; err != nil {
			t.Errorf("the ported manager exited with %v:\n%s", err, stderr.String())
		}
	}()

	ns := env.Namespace(t)
	guests := dynamic.NewForConfigOrDie(env.Config()).Resource(schema.GroupVersionResource{Group: "guestbook.example.com", Version: "v1", Resource: "guests"}).Namespace(ns)
	guest := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "guestbook.example.com/v1", "kind": "Guest",
		"metadata": map[string]any{"name": "ada"},
		"spec":     map[string]any{"name": "Ada"},
	}}
	if _, err := guests.Create(ctx, guest, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A Secret that names the guest, read through the project's field
	// index, which runs on opkit's cache (crport.FieldIndexer).
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ada-token", Labels: map[string]string{"guest": "ada"}}}
	if _, err := env.Client().CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nsObj, err := env.Client().CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var cm *corev1.ConfigMap
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-exited:
			exited <- err
			return false, fmt.Errorf("the ported manager exited: %v", err)
		default:
		}
		cm, err = env.Client().CoreV1().ConfigMaps(ns).Get(ctx, "guest-ada", metav1.GetOptions{})
		return err == nil && cm.Data["secrets"] == "1", nil
	})
	if err != nil {
		t.Fatalf("no ConfigMap guest-ada counting one Secret from the ported manager: %v (last read: %v)\n%s", err, cm, stderr.String())
	}
	want := map[string]string{"greeting": "Welcome, Ada", "namespace-uid": string(nsObj.UID)}
	if cm.Data["greeting"] != want["greeting"] || cm.Data["namespace-uid"] != want["namespace-uid"] {
		t.Errorf("ConfigMap guest-ada holds %v, want %v", cm.Data, want)
	}
	if ref := metav1.GetControllerOf(cm); ref == nil || ref.Kind != "Guest" || ref.Name != "ada" {
		t.Errorf("ConfigMap guest-ada is controlled by %v, want the Guest ada", ref)
	}

	// The webhooks, at kubebuilder's paths and the custom one, as the API
	// server would call them.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(crt)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
	review := func(path, name string) admissionv1.AdmissionResponse {
		t.Helper()
		body := fmt.Sprintf(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1","kind":{"group":"guestbook.example.com","version":"v1","kind":"Guest"},"resource":{"group":"guestbook.example.com","version":"v1","resource":"guests"},"operation":"CREATE","namespace":%q,"name":"g","object":{"apiVersion":"guestbook.example.com/v1","kind":"Guest","metadata":{"name":"g","namespace":%q},"spec":{"name":%q}}}}`, ns, ns, name)
		// The webhook server starts beside the controllers: wait for it
		// to listen, if it does not yet.
		var resp *http.Response
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			var err error
			resp, err = hc.Post(fmt.Sprintf("https://127.0.0.1:%d%s", port, path), "application/json", strings.NewReader(body))
			return err == nil, nil
		})
		if err != nil {
			t.Fatalf("POST %s: no answer within a minute: %v\n%s", path, err, stderr.String())
		}
		defer resp.Body.Close()
		var out admissionv1.AdmissionReview
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Response == nil {
			t.Fatalf("POST %s: %s, %v", path, resp.Status, err)
		}
		return *out.Response
	}
	if r := review("/custom-default-guest", ""); !r.Allowed || !strings.Contains(string(r.Patch), `"stranger"`) {
		t.Errorf("the defaulter at its custom path answered %+v, want a patch naming the guest stranger", r)
	}
	if r := review("/validate-guestbook-example-com-v1-guest", "nobody"); r.Allowed || r.Result == nil || !strings.Contains(r.Result.Message, "a guest cannot be nobody") {
		t.Errorf("the validator answered %+v, want a refusal", r)
	}
	if r := review("/validate-guestbook-example-com-v1-guest", "Ada"); !r.Allowed {
		t.Errorf("the validator refused Ada: %+v", r)
	}
}

// lockedBuffer is a buffer safe to write and read at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
