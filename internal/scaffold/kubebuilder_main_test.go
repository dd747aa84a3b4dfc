package scaffold

import (
	"os"
	"path/filepath"
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
	ctrl "sigs.k8s.io/controller-runtime"
)

var scheme = runtime.NewScheme()

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
	setupControllers(mgr)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		os.Exit(1)
	}
}

func setupControllers(mgr ctrl.Manager) {
	_ = mgr
}

func helper() string { return "kept" }
`
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "cmd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cmd/main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	gofiles, err := loadGoFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep := &portReport{}
	out, err := portMain(gofiles[0], "example.com/x", portedSetups{}, rep)
	if err != nil {
		t.Fatal(err)
	}
	report := string(rep.markdown("x"))
	needs := report[:strings.Index(report, "## Mapped")]
	for _, want := range []string{
		"`cmd/main.go:17`: flag --extra: parsed as before, but what main did with it is not ported",
		"`cmd/main.go:18`: flag --kube-api-qps: parsed as before, but what main did with it is not ported",
		"`cmd/main.go:22`: cfg.QPS = float32(qps): a statement of main that opkit does not map",
		"`cmd/main.go:26`: ctrl.Options.PprofBindAddress: a manager option opkit's manager.Options does not map",
		"`cmd/main.go:31`: setupControllers(mgr): a statement of main that opkit does not map",
		"`cmd/main.go:37`: func setupControllers: kept as it is, but it uses controller-runtime's manager",
	} {
		if !strings.Contains(needs, want) {
			t.Errorf("the report's needs lack %q:\n%s", want, report)
		}
	}
	if len(rep.Needs) != 6 {
		t.Errorf("%d items need a hand, want 6:\n%s", len(rep.Needs), report)
	}
	if strings.Contains(string(out), `"fmt"`) {
		t.Errorf("the ported main imports fmt, which it does not use with no setups:\n%s", out)
	}
	for _, want := range []string{"mgrOptions.Health.BindAddress = probeAddr", "mgrOptions.Scheme = scheme", "_ = unused // --extra: not ported", "func helper() string"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the ported main lacks %q:\n%s", want, out)
		}
	}
}

// An import of cert-controller's rotator is reported at its line.
func TestKubebuilderCertControllerReported(t *testing.T) {
	dir := t.TempDir()
	src := "package cert\n\nimport (\n\t\"fmt\"\n\n\tcert \"github.com/open-policy-agent/cert-controller/pkg/rotator\"\n)\n\nvar _ = fmt.Sprint\nvar _ cert.CertRotator\n"
	if err := os.MkdirAll(filepath.Join(dir, "pkg/util/cert"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pkg/util/cert/cert.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	gofiles, err := loadGoFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep := &portReport{}
	reportImports(gofiles, rep)
	if len(rep.Needs) != 1 || rep.Needs[0].where() != "pkg/util/cert/cert.go:6" || !strings.Contains(rep.Needs[0].How, "pkg/webhook/certs") {
		t.Errorf("needs %+v, want the rotator's import at pkg/util/cert/cert.go:6", rep.Needs)
	}
}
