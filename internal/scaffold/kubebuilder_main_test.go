package scaffold

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// What main does beyond kubebuilder's scaffold is reported, each at its
// line, and the rest of main is still ported.
func TestKubebuilderMainReportsWhatItCannotMap(t *testing.T) {
	const src = `package main

import (
	"flag"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var scheme = runtime.NewScheme()

var setupLog = ctrl.Log.WithName("setup")

func main() {
	var probeAddr, unused string
	var qps float64
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "")
	flag.StringVar(&unused, "extra", "", "")
	flag.Float64Var(&qps, "kube-api-qps", 50, "")
	flag.Parse()

	cfg := ctrl.GetConfigOrDie()
	cfg.QPS = float32(qps)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		HealthProbeBindAddress: probeAddr,
		PprofBindAddress:       ":6060",
	})
	if err != nil {
		os.Exit(1)
	}
	if err := index(mgr.GetFieldIndexer()); err != nil {
		setupLog.Error(err, "index")
	}
	if err := check(cfg); err != nil {
		setupLog.Error(err, "check")
	}
	c := mgr.GetClient()
	_ = c
	setupLog.Info("set up")
	setupControllers(mgr)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		os.Exit(1)
	}
}

func setupControllers(mgr ctrl.Manager) {
	_ = mgr
}

func helper() string { return "kept" }

func index(client.FieldIndexer) error { return nil }

func check(*rest.Config) error { return nil }
`
	out, rep := portMainOf(t, src)
	report := string(rep.markdown("x"))
	needs := report[:strings.Index(report, "## Mapped")]
	for _, want := range []string{
		"`cmd/main.go:21`: flag --extra: parsed as before, but what main did with it is not ported",
		"`cmd/main.go:22`: flag --kube-api-qps: parsed as before, but what main did with it is not ported",
		"`cmd/main.go:26`: cfg.QPS = float32(qps): a statement of main that opkit does not map",
		"`cmd/main.go:30`: ctrl.Options.PprofBindAddress: a manager option opkit's manager.Options does not map",
		"`cmd/main.go:38`: if err := check(cfg); err != nil {: a statement of main that opkit does not map",
		"`cmd/main.go:44`: setupControllers(mgr): a statement of main that opkit does not map",
		"`cmd/main.go:50`: func setupControllers: kept as it is, but it uses controller-runtime's manager",
	} {
		if !strings.Contains(needs, want) {
			t.Errorf("the report's needs lack %q:\n%s", want, report)
		}
	}
	if !strings.Contains(report, "`cmd/main.go:35`: if err := index(mgr.GetFieldIndexer()); err != nil {: kept in setup, on opkit's manager") {
		t.Errorf("the report does not say the index statement was kept:\n%s", report)
	}
	if len(rep.Needs) != 7 {
		t.Errorf("%d items need a hand, want 7:\n%s", len(rep.Needs), report)
	}
	if strings.Contains(string(out), `"fmt"`) {
		t.Errorf("the ported main imports fmt, which it does not use with no setups:\n%s", out)
	}
	for _, want := range []string{"mgrOptions.Health.BindAddress = probeAddr", "mgrOptions.Scheme = scheme", "_ = unused // --extra: not ported", "func helper() string", "c := mgr.CachedClient()\n\t\t_ = c\n",
		"if err := index(crport.FieldIndexer(mgr)); err != nil {\n\t\t\tsetupLog.Error(err, \"index\")"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the ported main lacks %q:\n%s", want, out)
		}
	}
}

// An import of cert-controller's rotator is reported at its line, with
// what the port does with it.
func TestKubebuilderCertControllerReported(t *testing.T) {
	src := "package cert\n\nimport (\n\t\"fmt\"\n\n\tcert \"github.com/open-policy-agent/cert-controller/pkg/rotator\"\n)\n\nvar _ = fmt.Sprint\nvar _ cert.CertRotator\n"
	dir := writeProject(t, map[string]string{"pkg/util/cert/cert.go": src})
	gofiles, err := loadGoFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep := &portReport{}
	reportImports(gofiles, rep)
	if len(rep.Needs) != 0 || len(rep.Mapped) != 1 || rep.Mapped[0].where() != "pkg/util/cert/cert.go:6" || !strings.Contains(rep.Mapped[0].How, "crport.ControllerRuntimeManager") || !strings.Contains(rep.Mapped[0].How, "pkg/webhook/certs") {
		t.Errorf("needs %+v, mapped %+v; want the rotator's import at pkg/util/cert/cert.go:6, mapped onto the hosted manager", rep.Needs, rep.Mapped)
	}
}

// portMainOf ports src, a kubebuilder project's cmd/main.go, and returns
// the port's main and the report.
func portMainOf(t *testing.T, src string) ([]byte, *portReport) {
	t.Helper()
	gofiles, err := loadGoFiles(writeProject(t, map[string]string{"cmd/main.go": src}))
	if err != nil {
		t.Fatal(err)
	}
	rep := &portReport{}
	out, err := portMain(gofiles[0], "example.com/x", portedSetups{}, rep)
	if err != nil {
		t.Fatal(err)
	}
	return out, rep
}

// writeProject writes files, by slash-separated path, into a new temporary
// project directory, and returns it.
func writeProject(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// main's own set-up, which needs no manager or only its client, is kept in
// setup in main's order, with its error checks; what follows the manager's
// start is reported; variables nothing in the port reads are silenced, and
// the port's main builds (onepassword-operator's did not: it lost the
// 1Password client its reconcilers are given).
func TestKubebuilderMainKeepsItsOwnSetup(t *testing.T) {
	const src = `package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var scheme = runtime.NewScheme()

var setupLog = ctrl.Log.WithName("setup")

type apiClient struct{}

func newAPIClient(ctx context.Context) (*apiClient, error) { return &apiClient{}, ctx.Err() }

func poll(ctx context.Context, c client.Client, api *apiClient) error { return nil }

func main() {
	var webhookCertPath, webhookCertName string
	var probeAddr string
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "")
	flag.Parse()

	ctx := ctrl.SetupSignalHandler()
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{Scheme: scheme, HealthProbeBindAddress: probeAddr})
	if err != nil {
		setupLog.Error(err, "unable to start manager")
		os.Exit(1)
	}
	var webhookCertWatcher *certwatcher.CertWatcher
	if len(webhookCertPath) > 0 {
		webhookCertWatcher, err = certwatcher.New(filepath.Join(webhookCertPath, webhookCertName), "tls.key")
		if err != nil {
			os.Exit(1)
		}
	}
	api, err := newAPIClient(ctx)
	if err != nil {
		setupLog.Error(err, "unable to create the API client")
		os.Exit(1)
	}
	r, _ := regexp.Compile("^example[.]com/")
	done := make(chan bool)
	ticker := time.NewTicker(time.Minute)
	go func(ctx context.Context) {
		for {
			select {
			case <-done:
				ticker.Stop()
				return
			case <-ticker.C:
				if err := poll(ctx, mgr.GetClient(), api); err != nil && !errors.Is(err, &cache.ErrCacheNotStarted{}) && r.MatchString("x") {
					setupLog.Error(err, "poll")
				}
			}
		}
	}(ctx)
	if err := mgr.Start(ctx); err != nil {
		setupLog.Error(err, "problem running manager")
		os.Exit(1)
	}
	close(done)
}
`
	out, rep := portMainOf(t, src)
	report := string(rep.markdown("x"))
	if len(rep.Needs) != 1 || rep.Needs[0].where() != "cmd/main.go:73" {
		t.Errorf("needs %+v, want only close(done), after the manager's start, at cmd/main.go:73:\n%s", rep.Needs, report)
	}
	for _, want := range []string{
		"`cmd/main.go:48`: api, err := newAPIClient(ctx): kept in setup, as it is",
		"`cmd/main.go:49`: if err != nil {: kept in setup: it checks the statement kept before it",
		"`cmd/main.go:56`: go func(ctx context.Context) {: kept in setup, on opkit's manager",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
	for _, want := range []string{
		"api, err := newAPIClient(ctx)\n\t\tif err != nil {\n\t\t\tsetupLog.Error(err, \"unable to create the API client\")",
		"poll(ctx, mgr.CachedClient(), api)",
		"_ = webhookCertPath // main's; nothing the port runs reads it",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the ported main lacks %q:\n%s", want, out)
		}
	}
	buildPortedMain(t, out)
}

// buildPortedMain builds out, a port's main, against opkit: an overlay
// puts it in a package of this module, which has what it imports.
func buildPortedMain(t *testing.T, out []byte) {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	mainFile := filepath.Join(tmp, "main.go")
	if err := os.WriteFile(mainFile, out, 0o644); err != nil {
		t.Fatal(err)
	}
	overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(wd, "testdata", "portedmain", "main.go"): mainFile}})
	if err := os.WriteFile(filepath.Join(tmp, "overlay.json"), overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-overlay", filepath.Join(tmp, "overlay.json"), "-o", os.DevNull, "./testdata/portedmain")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("the ported main does not build: %v\n%s\n%s", err, b, out)
	}
}

// A main that builds controller-runtime's manager options at run time
// (jobset and lws load theirs from a config file, then apply their flags)
// keeps what it does before the manager as it is, with its comments, and
// gives opkit's manager what crport.ManagerOptions maps them to; its flags
// are used as it used them. Statements after the manager that still set
// the options, or a flag's variable, are reported: the manager already
// has its options. Before, each statement that built the options was
// reported, and the port's manager ran without the config file.
func TestKubebuilderMainMapsOptionsBuiltAtRunTime(t *testing.T) {
	const src = `package main

import (
	"flag"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

var scheme = runtime.NewScheme()

var setupLog = ctrl.Log.WithName("setup")

type config struct{ Probe string }

func apply(file string) (ctrl.Options, config, error) { return ctrl.Options{Scheme: scheme}, config{}, nil }

func main() {
	var configFile string
	var qps float64
	flag.StringVar(&configFile, "config", "", "")
	flag.Float64Var(&qps, "kube-api-qps", 50, "")
	flag.Parse()

	var options manager.Options
	kubeConfig := ctrl.GetConfigOrDie()
	options, cfg, err := apply(configFile)
	if err != nil {
		os.Exit(1)
	}
	// The probe address from the config file.
	options.HealthProbeBindAddress = cfg.Probe
	kubeConfig.QPS = float32(qps)
	var extra manager.Runnable
	ctx := ctrl.SetupSignalHandler()
	mgr, err := ctrl.NewManager(kubeConfig, options)
	if err != nil {
		os.Exit(1)
	}
	options.LeaderElection = true
	_ = extra
	if err := mgr.Start(ctx); err != nil {
		os.Exit(1)
	}
}
`
	out, rep := portMainOf(t, src)
	report := string(rep.markdown("x"))
	var needs []string
	for _, n := range rep.Needs {
		needs = append(needs, n.where()+" "+n.What)
	}
	if !slices.Equal(needs, []string{"cmd/main.go:42 options.LeaderElection = true"}) {
		t.Errorf("needs %q, want only the option set after the manager was made:\n%s", needs, report)
	}
	for _, want := range []string{
		"`cmd/main.go:29`: options, cfg, err := apply(configFile): kept before the manager, as it is",
		"`cmd/main.go:38`: mgr, err := ctrl.NewManager(kubeConfig, options): manager.New(kubeConfig, crport.ManagerOptions(options))",
		"`cmd/main.go:24`: flag --kube-api-qps: parsed as before and passed on as main passed it",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
	for _, want := range []string{
		"\t// The probe address from the config file.\n\toptions.HealthProbeBindAddress = cfg.Probe\n",
		"mgrOptions, err := crport.ManagerOptions(options)",
		// main's manager is controller-runtime's package; opkit's gets another name.
		"opkitmanager \"github.com/opkit-dev/opkit/pkg/manager\"",
		"mgr, err := opkitmanager.New(kubeConfig, mgrOptions)",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the ported main lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(string(out), "SetupSignalHandler()") != 1 {
		t.Errorf("the ported main calls SetupSignalHandler other than once, main's, which panics on a second call:\n%s", out)
	}
	buildPortedMain(t, out)
}

// A flag main uses before its logger is set (lws's --version, which prints
// the version and exits) is used as main used it, not reported as lost.
func TestKubebuilderMainFlagUsedBeforeTheLogger(t *testing.T) {
	const src = `package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
)

var setupLog = ctrl.Log.WithName("setup")

func main() {
	var printVersion bool
	flag.BoolVar(&printVersion, "version", false, "Print version information and exit")
	flag.Parse()
	if printVersion {
		fmt.Println("v1")
		os.Exit(0)
	}
	ctrl.SetLogger(logr.Discard())

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{})
	if err != nil {
		os.Exit(1)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		os.Exit(1)
	}
}
`
	out, rep := portMainOf(t, src)
	report := string(rep.markdown("x"))
	if len(rep.Needs) != 0 || !strings.Contains(report, "`cmd/main.go:16`: flag --version: parsed as before and passed on as main passed it") {
		t.Errorf("the report does not say --version is used as main used it:\n%s", report)
	}
	if !strings.Contains(string(out), "if printVersion {") || strings.Contains(string(out), "_ = printVersion") {
		t.Errorf("the ported main does not use --version as main did:\n%s", out)
	}
	buildPortedMain(t, out)
}

// Options main makes from a ctrl.Options literal in a variable
// (kubebuilder's with-plugins scaffold: mgrOptions := ctrl.Options{...})
// are mapped field by field, as a literal given to NewManager is; options
// built otherwise, in a variable named as the port names opkit's, leave
// main's name to main.
func TestKubebuilderMainOptionsVariables(t *testing.T) {
	const literal = `package main

import (
	"flag"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
)

var setupLog = ctrl.Log.WithName("setup")

func main() {
	var probeAddr string
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "")
	flag.Parse()

	mgrOptions := ctrl.Options{HealthProbeBindAddress: probeAddr}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), mgrOptions)
	if err != nil {
		os.Exit(1)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		os.Exit(1)
	}
}
`
	out, rep := portMainOf(t, literal)
	if len(rep.Needs) != 0 || strings.Contains(string(out), "crport.ManagerOptions") || !strings.Contains(string(out), "mgrOptions.Health.BindAddress = probeAddr") {
		t.Errorf("a literal's options are not mapped field by field:\n%s\n%s", rep.markdown("x"), out)
	}
	buildPortedMain(t, out)

	built := strings.Replace(literal, "mgrOptions := ctrl.Options{HealthProbeBindAddress: probeAddr}", "var mgrOptions ctrl.Options\n\tmgrOptions.HealthProbeBindAddress = probeAddr", 1)
	out, rep = portMainOf(t, built)
	for _, want := range []string{"opkitOptions, err := crport.ManagerOptions(mgrOptions)", "mgr, err := manager.New(ctrl.GetConfigOrDie(), opkitOptions)"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the ported main lacks %q:\n%s", want, out)
		}
	}
	if len(rep.Needs) != 0 {
		t.Errorf("items need a hand:\n%s", rep.markdown("x"))
	}
	buildPortedMain(t, out)
}
