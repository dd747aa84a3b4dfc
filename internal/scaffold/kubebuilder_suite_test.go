package scaffold

import (
	"strings"
	"testing"
)

// suiteSrc is an envtest suite's setup on controller-runtime's manager;
// extra replaces its marker line.
const suiteSrc = `package controller_test

import (
	"context"

	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"example.com/x/internal/controller"
	webhookv1 "example.com/x/internal/webhook/v1"
)

var k8sManager ctrl.Manager

func setup(ctx context.Context, cfg *rest.Config) error {
	var err error
	k8sManager, err = ctrl.NewManager(cfg, ctrl.Options{
		Scheme:        scheme.Scheme,
		Metrics:       metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: 9443, CertDir: "/tmp"}),
	})
	if err != nil {
		return err
	}
	Expect(k8sManager).NotTo(BeNil())
	r := controller.NewXReconciler(k8sManager.GetClient(), k8sManager.GetEventRecorderFor("x"))
	if err := r.SetupWithManager(k8sManager); err != nil {
		return err
	}
	if err := (&controller.YReconciler{Client: k8sManager.GetClient()}).SetupWithManager(k8sManager); err != nil {
		return err
	}
	if err := webhookv1.SetupGuestWebhookWithManager(k8sManager); err != nil {
		return err
	}
	// extra
	go func() { _ = k8sManager.Start(ctx) }()
	return nil
}

func Expect(any) interface{ NotTo(any) } { return nil }
func BeNil() any                        { return nil }
`

// An envtest suite that sets up the project's controllers and webhooks on
// controller-runtime's manager is rewritten onto opkit's, so that the
// project's own tests run its code on opkit; one that uses the manager in
// a way the converter cannot map is left as it is, and reported at the line.
func TestKubebuilderSuitePorted(t *testing.T) {
	setups := portedSetups{
		"example.com/x/internal/controller.XReconciler":                  "SetupWithOpkit",
		"example.com/x/internal/controller.YReconciler":                  "SetupWithOpkit",
		"example.com/x/internal/webhook/v1.SetupGuestWebhookWithManager": "SetupGuestWebhookWithOpkit",
		// lws's pod webhook, set up by a method of what its constructor makes.
		ctorKey("example.com/x/internal/webhook/v1", "NewPodHook"): "example.com/x/internal/webhook/v1.PodHook",
		"example.com/x/internal/webhook/v1.PodHook.Setup":          "SetupWithOpkit",
	}
	controllerSrc := "package controller\n\ntype XReconciler struct{}\n\nfunc NewXReconciler(c, r any) *XReconciler { return nil }\n\ntype ZReconciler struct{}\n"
	for _, tt := range []struct {
		name, extra, options string
		why                  string // "" when the suite ports
		want                 string // what else the ported suite holds
	}{
		{name: "ported"},
		{name: "a webhook set up by a method", extra: "pw = webhookv1.NewPodHook()\n\tif err := pw.Setup(k8sManager); err != nil {\n\t\treturn err\n\t}", want: "if err := pw.SetupWithOpkit(k8sManager); err != nil {"},
		{name: "the manager passed on", extra: "customSetup(k8sManager)", why: "customSetup(k8sManager): passes the manager to code written for controller-runtime's"},
		{name: "a method opkit's manager lacks", extra: "_ = k8sManager.GetRESTMapper()", why: "k8sManager.GetRESTMapper: a method of controller-runtime's manager opkit's does not have"},
		{name: "a controller with no twin", extra: "_ = (&controller.ZReconciler{}).SetupWithManager(k8sManager)", why: "its controller has no SetupWithOpkit"},
		{name: "an option not mapped", options: "\t\tCache: cache.Options{},\n", why: "ctrl.Options.Cache in a suite"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(suiteSrc, "// extra", tt.extra, 1)
			if strings.Contains(tt.extra, "pw =") {
				src += "\nvar pw *webhookv1.PodHook\n"
			}
			src = strings.Replace(src, "\t\tScheme:        scheme.Scheme,\n", "\t\tScheme:        scheme.Scheme,\n"+tt.options, 1)
			dir := writeProject(t, map[string]string{"internal/controller/suite_test.go": src, "internal/controller/x.go": controllerSrc})
			gofiles, err := loadGoFiles(dir)
			if err != nil {
				t.Fatal(err)
			}
			rep := &portReport{}
			out := files{}
			ported, err := portSuites(dir, "example.com/x", gofiles, setups, out, rep)
			if err != nil {
				t.Fatal(err)
			}
			if tt.why != "" {
				if len(ported) != 0 || len(rep.Needs) != 1 || !strings.Contains(rep.Needs[0].How, tt.why) || rep.Needs[0].Line == 0 {
					t.Errorf("ported %d, needs %+v; want the suite left as it is and reported at its line: %q", len(ported), rep.Needs, tt.why)
				}
				return
			}
			if len(ported) != 1 || len(rep.Needs) != 0 {
				t.Fatalf("ported %d, needs %+v; want the suite ported", len(ported), rep.Needs)
			}
			got := string(out["internal/controller/suite_test.go"])
			flat := strings.Join(strings.Fields(got), " ")
			for _, want := range []string{
				"var k8sManager *manager.Manager",
				"k8sManager, err = manager.New(cfg, manager.Options{",
				`Metrics:       manager.MetricsOptions{BindAddress: "0"}`,
				`Webhook:       manager.WebhookOptions{Host: "127.0.0.1", Port: 9443, CertDir: "/tmp"}`,
				`Health:        manager.HealthOptions{BindAddress: "0"}`,
				`controller.NewXReconciler(k8sManager.CachedClient(), crport.LegacyRecorder(crport.MustEventRecorder(k8sManager, "x")))`,
				"r.SetupWithOpkit(k8sManager)",
				"(&controller.YReconciler{Client: k8sManager.CachedClient()}).SetupWithOpkit(k8sManager)",
				"webhookv1.SetupGuestWebhookWithOpkit(k8sManager)",
				`manager "github.com/opkit-dev/opkit/pkg/manager"`,
				`crport "github.com/opkit-dev/opkit/pkg/crport"`,
			} {
				if !strings.Contains(flat, strings.Join(strings.Fields(want), " ")) {
					t.Errorf("the ported suite lacks %q:\n%s", want, got)
				}
			}
			if tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("the ported suite lacks %q:\n%s", tt.want, got)
			}
			for _, gone := range []string{`"sigs.k8s.io/controller-runtime"`, "metricsserver", `"sigs.k8s.io/controller-runtime/pkg/webhook"`} {
				if strings.Contains(got, gone) {
					t.Errorf("the ported suite still imports %s:\n%s", gone, got)
				}
			}
		})
	}
}

// kubebuilder's webhook suite, in the webhook's own package, calls the
// setup by its bare name; a reconciler of the package is named bare too.
func TestKubebuilderSuiteInPackage(t *testing.T) {
	src := `package v1

import (
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
)

func setup(cfg *rest.Config) error {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{})
	if err != nil {
		return err
	}
	if err := SetupGuestWebhookWithManager(mgr); err != nil {
		return err
	}
	return (&GuestReconciler{}).SetupWithManager(mgr)
}
`
	dir := writeProject(t, map[string]string{"internal/webhook/v1/webhook_suite_test.go": src})
	setups := portedSetups{
		"example.com/x/internal/webhook/v1.SetupGuestWebhookWithManager": "SetupGuestWebhookWithOpkit",
		"example.com/x/internal/webhook/v1.GuestReconciler":              "SetupWithOpkit",
	}
	rep := &portReport{}
	out := files{}
	ported, err := portSuites(dir, "example.com/x", nil, setups, out, rep)
	if err != nil {
		t.Fatal(err)
	}
	got := string(out["internal/webhook/v1/webhook_suite_test.go"])
	if len(ported) != 1 || !strings.Contains(got, "SetupGuestWebhookWithOpkit(mgr)") || !strings.Contains(got, "(&GuestReconciler{}).SetupWithOpkit(mgr)") {
		t.Errorf("ported %d, needs %+v; want the bare setups mapped:\n%s", len(ported), rep.Needs, got)
	}
}
