package main

import (
	"bufio"
	"context"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"

	"github.com/opkit-dev/opkit/pkg/manager"
)

func TestBadFlags(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		mention string
	}{
		{[]string{"--max-concurrent-reconciles", "0"}, "--max-concurrent-reconciles is 0"},
		{[]string{"-v", "3"}, "-v is 3"},
		{[]string{"--local", "--kubeconfig", "x"}, "exclude each other"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"--no-such-flag"}, "no-such-flag"},
		{[]string{"--metrics-bind-address", "8080", "--kubeconfig", "testdata/unreachable.kubeconfig"}, `Metrics.BindAddress "8080"`},
		{[]string{"--webhook-port", "70000"}, "--webhook-port is 70000"},
		{[]string{"--local", "--webhook-port", "70000"}, "--webhook-port is 70000"},
		{[]string{"--local", "--webhook-certs", "mounted"}, "--local installs the webhooks on its control plane with a certificate of its own, so --webhook-certs would do nothing"},
		{[]string{"--webhook-port", "-1"}, "--webhook-port is -1"},
		{[]string{"--webhook-certs", "cert-manager"}, `--webhook-certs is "cert-manager": want "self-managed" or "mounted"`},
		{[]string{"--webhook-port", "0", "--webhook-certs", "mounted"}, "--webhook-port=0 turns the webhook server off, so --webhook-certs would do nothing"},
		{[]string{"--webhook-certs", "mounted", "--webhook-ca-secret", "ca", "--conversion-crd", "x"}, "--webhook-certs=mounted takes the certificate as mounted, so --webhook-ca-secret, --conversion-crd would do nothing"},
		{[]string{"--webhook-cert-dir", ""}, "--webhook-cert-dir is empty"},
		{[]string{"--webhook-service-name", ""}, "must not be empty with --webhook-certs=self-managed"},
	} {
		err := run(t.Context(), tt.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("run(%q) = %v, want an error mentioning %q", tt.args, err, tt.mention)
		}
	}
}

// An unreachable cluster fails at once, naming its address.
func TestUnreachableCluster(t *testing.T) {
	start := time.Now()
	// Outside a pod, the self-managed webhook certificate needs the
	// namespace of its Service and CA Secret named.
	err := run(t.Context(), []string{"--kubeconfig", "testdata/unreachable.kubeconfig", "--webhook-namespace", "mirror-system"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "https://127.0.0.1:1") || !strings.Contains(err.Error(), "does not answer") {
		t.Errorf("run = %v, want an error naming the cluster that does not answer", err)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("took %v to give up", d)
	}
}

// TestLocal drives 'make run': the operator starts a control plane with the
// samples, says how to watch it, and the sample Mirror's copies appear.
func TestLocal(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, []string{"--local", "--local-dir", dir, "--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0"}, pw, io.Discard)
		pw.CloseWithError(err)
		done <- err
	}()
	var printed strings.Builder
	lines := bufio.NewScanner(pr)
	for !strings.Contains(printed.String(), "Press Ctrl-C") {
		if !lines.Scan() {
			t.Fatalf("run ended before it was ready (err %v); it printed:\n%s", lines.Err(), printed.String())
		}
		printed.WriteString(lines.Text() + "\n")
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	for _, want := range []string{"export KUBECONFIG=" + kubeconfig, "get mirrors -A", "label namespace team-b team=a"} {
		if !strings.Contains(printed.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, printed.String())
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	// Sized for a busy machine: the operator's first reconciles race its
	// caches' sync, and retry with backoff.
	deadline := time.Now().Add(2 * time.Minute)
	for _, ns := range []string{"team-a-web", "team-a-api"} {
		for {
			if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "ca-bundle", metav1.GetOptions{}); err == nil {
				break
			} else if time.Now().After(deadline) {
				t.Fatalf("no copy in %s: %v", ns, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// What the output says team-b gets once labelled: its owner granted
	// the Mirror's ServiceAccount its writes (config/samples).
	p := []byte(`{"metadata":{"labels":{"team":"a"}}}`)
	if _, err := cs.CoreV1().Namespaces().Patch(ctx, "team-b", types.MergePatchType, p, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := cs.CoreV1().ConfigMaps("team-b").Get(ctx, "ca-bundle", metav1.GetOptions{}); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("no copy in team-b once labelled team=a: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Run("webhooks", func(t *testing.T) { testLocalWebhooks(t, kubeconfig) })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run = %v after Ctrl-C", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("run did not stop within a minute of Ctrl-C")
	}
	if _, err := os.Stat(kubeconfig); !os.IsNotExist(err) {
		t.Errorf("the kubeconfig of the stopped control plane is still there (stat: %v)", err)
	}
}

// The webhook flags' defaults are the ones docs/webhooks.md lists and
// config/default renders (config_test.go checks the rendered names).
func TestWebhookFlagDefaults(t *testing.T) {
	f, err := parse(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := webhookFlags{
		port:       9443,
		certDir:    filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs"),
		certs:      "self-managed",
		service:    "mirror-webhook-service",
		caSecret:   "mirror-webhook-ca",
		validating: "mirror-validating-webhook-configuration",
		crd:        "mirrors.samples.opkit.dev",
	}
	if diff := cmp.Diff(want, f.webhook, cmp.AllowUnexported(webhookFlags{})); diff != "" {
		t.Errorf("webhook flags (-want +got):\n%s", diff)
	}
	if o := f.webhook.options(); o.Port != 9443 || o.CertDir != want.certDir {
		t.Errorf("manager webhook options = %+v, want port 9443 and the cert dir", o)
	}
	// --local installs the webhooks for a free port, or none with
	// --webhook-port=0.
	if f, err := parse([]string{"--local"}, io.Discard); err != nil || f.webhook.port != 0 {
		t.Errorf("parse(--local): webhook port %d, %v; want 0, a free port", f.webhook.port, err)
	}
	if f, err := parse([]string{"--local", "--webhook-port", "0"}, io.Discard); err != nil || f.webhook.port != localNoWebhooks {
		t.Errorf("parse(--local --webhook-port 0): webhook port %d, %v; want localNoWebhooks", f.webhook.port, err)
	}
	if f, err := parse([]string{"--webhook-port", "0"}, io.Discard); err != nil || f.webhook.options().Port != 0 {
		t.Errorf("parse(--webhook-port 0): %+v, %v; want no webhook server", f.webhook.options(), err)
	}
}

// Outside a pod, the self-managed certificates cannot guess the namespace
// of their Service and CA Secret, and say which flag to set.
func TestWebhookNamespaceOutsideAPod(t *testing.T) {
	if _, err := os.Stat(podNamespaceFile); err == nil {
		t.Skipf("%s exists: this runs in a pod", podNamespaceFile)
	}
	f, err := parse(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.webhook.rotatorOptions(logr.Discard()); err == nil || !strings.Contains(err.Error(), "set --webhook-namespace") {
		t.Errorf("rotatorOptions = %v, want an error that says to set --webhook-namespace", err)
	}
	f.webhook.namespace = "mirror-system"
	o, err := f.webhook.rotatorOptions(logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	if o.CASecret.String() != "mirror-system/mirror-webhook-ca" || o.Service.String() != "mirror-system/mirror-webhook-service" ||
		!slices.Equal(o.Targets.CRDs, []string{"mirrors.samples.opkit.dev"}) || len(o.Targets.MutatingWebhooks) != 0 || len(o.Targets.ValidatingWebhooks) != 1 {
		t.Errorf("rotator options = %+v", o)
	}
}

// registerWebhooks registers on the webhook server, and skips registering
// when --webhook-port=0 turned it off.
func TestRegisterWebhooks(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want int
	}{
		{[]string{"--webhook-port", "0"}, 0},
		{nil, 1},
	} {
		f, err := parse(tt.args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		mgr, err := manager.New(&rest.Config{Host: "https://127.0.0.1:1"}, manager.Options{Webhook: f.webhook.options(), Logger: logr.Discard()})
		if err != nil {
			t.Fatal(err)
		}
		calls := 0
		err = registerWebhooks(mgr, func(m *manager.Manager) error {
			calls++
			if m.WebhookServer() == nil {
				t.Error("registered without a webhook server")
			}
			return nil
		})
		if err != nil || calls != tt.want {
			t.Errorf("registerWebhooks with %q: %d calls, %v; want %d calls", tt.args, calls, err, tt.want)
		}
	}
}

// docs/webhooks.md lists every webhook flag with its default.
func TestWebhookFlagsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/webhooks.md")
	if err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	var w webhookFlags
	w.register(fs)
	fs.VisitAll(func(fl *flag.Flag) {
		row := ""
		for _, line := range strings.Split(string(doc), "\n") {
			if strings.HasPrefix(line, "| `--"+fl.Name+"` |") {
				row = line
			}
		}
		switch {
		case row == "":
			t.Errorf("docs/webhooks.md has no row for --%s", fl.Name)
		case fl.Name == "webhook-cert-dir":
			if !strings.Contains(row, "k8s-webhook-server/serving-certs") {
				t.Errorf("docs/webhooks.md gives --%s a default other than %s: %s", fl.Name, fl.DefValue, row)
			}
		case fl.DefValue != "" && !strings.Contains(row, "`"+fl.DefValue+"`"):
			t.Errorf("docs/webhooks.md gives --%s a default other than %s: %s", fl.Name, fl.DefValue, row)
		}
	})
}

// controller-runtime's own lines (its webhook server's, its certificate
// watcher's) are in the operator's log. controller-runtime takes only the
// first logger a process sets, so the check runs in a process of its own:
// this test binary again, running only this test.
func TestControllerRuntimeLogs(t *testing.T) {
	if os.Getenv("OPKIT_TEST_CTRL_LOG") == "1" {
		newLogger(os.Stdout, 0)
		ctrllog.Log.WithName("webhook").Info("Starting webhook server")
		return
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestControllerRuntimeLogs$")
	cmd.Env = append(os.Environ(), "OPKIT_TEST_CTRL_LOG=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if want := `"logger":"webhook",`; !strings.Contains(string(out), want) || !strings.Contains(string(out), "Starting webhook server") {
		t.Errorf("controller-runtime's line is not in the operator's log (no %s): it printed\n%s", want, out)
	}
}
