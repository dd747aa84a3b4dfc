package scaffold

import (
	"strings"
	"testing"
)

// Helpers that take the manager get twins on opkit's, called where main
// and the other helpers called them: jobset sets its controllers up in
// main's setupControllers(mgr), from reconcilers its constructors make,
// and its webhooks in webhooks.Setup(mgr), through setup functions not
// named kubebuilder's way. Before, the port's main set up no controller
// and served no webhook. A webhook's reads through the client it is given
// are registered with the cache.
func TestKubebuilderHelpersGetTwins(t *testing.T) {
	dir := writeProject(t, map[string]string{
		"cmd/main.go": `package main

import (
	"flag"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"

	"example.com/x/internal/certs"
	"example.com/x/internal/controller"
	"example.com/x/internal/webhooks"
)

var setupLog = ctrl.Log.WithName("setup")

func main() {
	var probeAddr string
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "")
	flag.Parse()

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{HealthProbeBindAddress: probeAddr})
	if err != nil {
		os.Exit(1)
	}
	certsReady := make(chan struct{})
	if err := certs.CertsManager(mgr, certsReady); err != nil {
		os.Exit(1)
	}
	setupControllers(mgr)
	if err := setupAdded(mgr); err != nil {
		os.Exit(1)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		os.Exit(1)
	}
}

func setupControllers(mgr ctrl.Manager) {
	foo := controller.NewFooReconciler(mgr.GetClient(), mgr.GetEventRecorder("foo"))
	if err := foo.SetupWithManager(mgr); err != nil {
		setupLog.Error(err, "unable to create controller", "controller", "Foo")
		os.Exit(1)
	}
	if err := webhooks.Setup(mgr); err != nil {
		os.Exit(1)
	}
	pw := webhooks.NewPodHook()
	if err := pw.Setup(mgr); err != nil {
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", func(*http.Request) error { return mgr.GetWebhookServer().StartedChecker()(nil) }); err != nil {
		os.Exit(1)
	}
}

func setupAdded(mgr ctrl.Manager) error {
	return mgr.Add(nil)
}
`,
		// jobset's and lws's: cert-controller's rotator, which takes
		// controller-runtime's manager, in a function of their own.
		"internal/certs/certs.go": `package certs

import (
	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
)

func CertsManager(mgr ctrl.Manager, ready chan struct{}) error {
	return rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey: types.NamespacedName{Namespace: "x-system", Name: "webhook-server-cert"},
		IsReady:   ready,
	})
}

func Other(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("other").Complete(nil)
}
`,
		"internal/controller/foo_controller.go": `package controller

import (
	"context"

	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/x/api/v1"
)

type FooReconciler struct {
	client.Client
	record events.EventRecorder
}

func NewFooReconciler(c client.Client, record events.EventRecorder) *FooReconciler {
	return &FooReconciler{Client: c, record: record}
}

func (r *FooReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return ctrl.Result{}, nil
}

func (r *FooReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.record == nil {
		r.record = mgr.GetEventRecorder("foo")
	}
	return ctrl.NewControllerManagedBy(mgr).For(&v1.Foo{}).Complete(r)
}
`,
		"internal/webhooks/setup.go": `package webhooks

import ctrl "sigs.k8s.io/controller-runtime"

func Setup(mgr ctrl.Manager) error {
	if err := setupWebhookForFoo(mgr); err != nil {
		return err
	}
	return nil
}
`,
		"internal/webhooks/pod_webhook.go": `package webhooks

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
)

type PodHook struct{}

func NewPodHook() *PodHook { return &PodHook{} }

func (p *PodHook) Setup(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &corev1.Pod{}).
		WithDefaulter(p).
		Complete()
}

func (p *PodHook) Default(ctx context.Context, pod *corev1.Pod) error { return nil }
`,
		"internal/webhooks/foo_webhook.go": `package webhooks

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/x/api/v1"
)

type fooWebhook struct{ client client.Client }

func setupWebhookForFoo(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &v1.Foo{}).
		WithDefaulter(&fooWebhook{client: mgr.GetClient()}).
		Complete()
}

func (w *fooWebhook) Default(ctx context.Context, foo *v1.Foo) error {
	var cm corev1.ConfigMap
	return w.client.Get(ctx, client.ObjectKey{Namespace: foo.Namespace, Name: "defaults"}, &cm)
}
`,
	})
	gofiles, err := loadGoFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep := &portReport{}
	out := files{}
	p := &kbProject{Resources: []kbResource{{Kind: "Foo", Path: "example.com/x/api/v1", Webhooks: &kbWebhooks{Line: 12, Defaulting: true}}}}
	setups, err := portSetups(gofiles, p, "example.com/x", out, rep)
	if err != nil {
		t.Fatal(err)
	}
	unservedWebhooks(p, setups, rep)
	var mainFile *kbFile
	for _, f := range gofiles {
		if f.Rel == "cmd/main.go" {
			mainFile = f
		}
	}
	main, err := portMain(mainFile, "example.com/x", setups, rep)
	if err != nil {
		t.Fatal(err)
	}
	report := string(rep.markdown("x"))
	needs := report[:strings.Index(report, "## Mapped")]
	for _, want := range []string{
		// A helper that uses what opkit's manager does not have stays
		// behind, and so does main's call of it.
		"`cmd/main.go:30`: if err := setupAdded(mgr); err != nil {: a statement of main that opkit does not map",
		"`cmd/main.go:56`: func setupAdded: kept as it is, but it uses controller-runtime's manager, which the port does not make, and main no longer calls it (no twin on opkit's manager: mgr.Add: a method of controller-runtime's manager opkit's does not have, or names differently)",
	} {
		if !strings.Contains(needs, want) {
			t.Errorf("the report's needs lack %q:\n%s", want, report)
		}
	}
	if len(rep.Needs) != 2 {
		t.Errorf("%d items need a hand, want 2:\n%s", len(rep.Needs), report)
	}
	// What controller-runtime's manager is given to, outside the project
	// and controller-runtime, runs on the one opkit's hosts; a
	// controller-runtime builder is not one of those.
	for _, want := range []string{
		"`internal/certs/certs.go:9`: func CertsManager: CertsManagerWithOpkit, on opkit's manager, in certs_opkit.go; rotator.AddRotator runs as it is on a controller-runtime manager opkit's hosts (crport.ControllerRuntimeManager)",
		"`cmd/main.go:26`: if err := certs.CertsManager(mgr, certsReady); err != nil {: kept in setup, on opkit's manager",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
	if strings.Contains(report, "OtherWithOpkit") {
		t.Errorf("a helper that gives the manager to controller-runtime's builder got a twin:\n%s", report)
	}
	for file, wants := range map[string][]string{
		"cmd/main_opkit.go": {
			"func setupControllersWithOpkit(mgr *manager.Manager) {",
			`foo := controller.NewFooReconciler(mgr.CachedClient(), crport.MustEventRecorder(mgr, "foo"))`,
			"if err := foo.SetupWithOpkit(mgr); err != nil {",
			"if err := webhooks.SetupWithOpkit(mgr); err != nil {",
			// lws's pod webhook: a method whose body is the builder chain.
			"if err := pw.SetupWithOpkit(mgr); err != nil {",
			"mgr.AddReadyCheck(\"readyz\", func(*http.Request) error { return mgr.WebhookServer().StartedChecker()(nil) })",
		},
		// What SetupWithManager does before its builder (lws's
		// DisaggregatedSet controller makes its helpers there).
		"internal/controller/foo_controller_opkit.go": {
			"if r.record == nil {\n\t\tr.record = crport.MustEventRecorder(mgr, \"foo\")\n\t}\n\t_, err := manager.NewController(mgr, \"foo\", crport.Reconciler(r),",
		},
		"internal/webhooks/setup_opkit.go": {
			"func SetupWithOpkit(mgr *manager.Manager) error {",
			"if err := setupWebhookForFooWithOpkit(mgr); err != nil {",
		},
		"internal/webhooks/pod_webhook_opkit.go": {
			"func (p *PodHook) SetupWithOpkit(mgr *manager.Manager) error {",
			"webhook.Hooks[*corev1.Pod]{Defaulter: p}",
		},
		"internal/webhooks/foo_webhook_opkit.go": {
			"func setupWebhookForFooWithOpkit(mgr *manager.Manager) error {",
			"webhook.Hooks[*v1.Foo]{Defaulter: &fooWebhook{client: mgr.CachedClient()}}",
			// What the defaulter reads through the client it was given
			// (jobset's validator reads PersistentVolumeClaims: on
			// opkit, unregistered, every such request was refused).
			"if _, err := cache.Register[*corev1.ConfigMap](mgr.Cache(), cache.TypeOptions{}); err != nil {",
		},
		"internal/certs/certs_opkit.go": {
			"func CertsManagerWithOpkit(mgr *manager.Manager, ready chan struct{}) error {\n\treturn rotator.AddRotator(crport.MustControllerRuntimeManager(mgr), &rotator.CertRotator{",
			`"github.com/opkit-dev/opkit/pkg/crport"`,
		},
		"cmd/main.go": {
			"if err := certs.CertsManagerWithOpkit(mgr, certsReady); err != nil {",
			"setupControllersWithOpkit(mgr)",
			// The webhooks setupControllers reaches need a server.
			"mgrOptions.Webhook.Port = 9443",
		},
	} {
		src := string(out[file])
		if file == "cmd/main.go" {
			src = string(main)
		}
		for _, want := range wants {
			if !strings.Contains(src, want) {
				t.Errorf("%s lacks %q:\n%s", file, want, src)
			}
		}
	}
	if strings.Contains(string(main), "func setupControllers(") {
		t.Errorf("the port's main keeps setupControllers, which its twin replaces:\n%s", main)
	}
}

// Once no recipe runs setup-envtest, no target installs it first: jobset's
// test target depended on envtest, whose install fetches a
// controller-runtime branch (setup-envtest@release-0.25) that an offline
// module proxy does not serve, so the port's make test failed before any
// test ran.
func TestPortMakefileDropsTheEnvtestInstall(t *testing.T) {
	const jobset = "ENVTEST ?= $(LOCALBIN)/setup-envtest\n" +
		"test: manifests fmt vet envtest gotestsum ## Run tests.\n" +
		"\tKUBEBUILDER_ASSETS=\"$(shell $(ENVTEST) use $(ENVTEST_K8S_VERSION) --bin-dir $(LOCALBIN) -p path)\" go test ./...\n" +
		"envtest: $(ENVTEST)\n" +
		"$(ENVTEST): $(LOCALBIN)\n" +
		"\tGOBIN=$(LOCALBIN) go install sigs.k8s.io/controller-runtime/tools/setup-envtest@$(ENVTEST_VERSION)\n"
	rep := &portReport{}
	got := string(portMakefile([]byte(jobset), rep))
	for _, want := range []string{"test: manifests fmt vet gotestsum ## Run tests.\n", "KUBEBUILDER_ASSETS=\"$(shell go tool opkit envtest)\"", "envtest: $(ENVTEST)\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("the port's Makefile lacks %q:\n%s", want, got)
		}
	}
	if !strings.Contains(string(rep.markdown("x")), "`Makefile:2`: test's prerequisite envtest: dropped") {
		t.Errorf("the report does not say the prerequisite was dropped:\n%s", rep.markdown("x"))
	}
	// A recipe that still runs setup-envtest keeps the install.
	still := jobset + "print:\n\t$(ENVTEST) list\n"
	if got := string(portMakefile([]byte(still), &portReport{})); !strings.Contains(got, "test: manifests fmt vet envtest gotestsum") {
		t.Errorf("the install was dropped while a recipe still runs setup-envtest:\n%s", got)
	}
}
