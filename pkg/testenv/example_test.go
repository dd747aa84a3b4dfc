package testenv_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opkit-dev/opkit/pkg/cache"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

// A missing control plane is reported with the command that builds it, and
// errors.Is tells it apart from other start failures.
func ExampleStart_missingBinaries() {
	_, err := testenv.Start(testenv.Options{BinaryDir: filepath.Join("testdata", "no-binaries")})
	fmt.Println(errors.Is(err, testenv.ErrBinariesMissing))
	// Output: true
}

var env *testenv.Environment

// One control plane serves a whole test package: start it from TestMain.
func ExampleMain() {
	// In a _test.go file:
	_ = func(m *testing.M) { // func TestMain(m *testing.M)
		testenv.Main(m, testenv.Options{CRDDirs: []string{"../../config/crd"}}, func(e *testenv.Environment) { env = e })
	}
}

// Each test gets a namespace of its own, deleted when it ends.
func ExampleEnvironment_Namespace() {
	_ = func(t *testing.T) { // func TestSomething(t *testing.T)
		ns := env.Namespace(t)
		_, _ = env.Client().CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	}
}

// A cache made in a test reports a modified cached object as a failure of
// that test, naming the object and the changed fields.
func ExampleReportMutations() {
	_ = func(t *testing.T) { // func TestSomething(t *testing.T)
		c, err := cache.New(env.Config(), cache.Options{
			Mutations: cache.MutationOptions{OnMutation: testenv.ReportMutations(t)},
		})
		if err != nil {
			t.Fatal(err)
		}
		_ = c
	}
}

// A test package whose manager serves the project's webhooks: TestMain
// installs config/webhook/manifests.yaml and the conversion of the CRD
// with two versions; each test's manager serves at env.Webhook().
func ExampleEnvironment_Webhook() {
	_ = func(m *testing.M) { // func TestMain(m *testing.M)
		testenv.Main(m, testenv.Options{
			CRDDirs: []string{"../../config/crd/bases"},
			Webhook: testenv.WebhookOptions{
				Paths:       []string{"../../config/webhook"},
				ConvertCRDs: []string{"mirrors.samples.opkit.dev"},
			},
		}, func(e *testenv.Environment) { env = e })
	}
	_ = func(t *testing.T) { // func TestMirrorWebhooks(t *testing.T)
		s := env.Webhook()
		mgr, err := manager.New(env.Config(), manager.Options{
			Webhook: manager.WebhookOptions{Host: s.Host, Port: s.Port, CertDir: s.CertDir},
		})
		if err != nil {
			t.Fatal(err)
		}
		_ = mgr // webhook.Register(mgr, ...); webhook.RegisterConversion(mgr, ...); mgr.Start(ctx)
	}
}

// A test runs the operator as it is deployed: as the ServiceAccount of its
// config/rbac, with a kubeconfig that holds nothing but a token.
func ExampleEnvironment_ApplyRBAC() {
	_ = func(t *testing.T) { // func TestDeployed(t *testing.T)
		sas, err := env.ApplyRBAC(t.Context(), "../../config/default")
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := env.ServiceAccountConfig(t.Context(), sas[0], 0)
		if err != nil {
			t.Fatal(err)
		}
		kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
		if err := testenv.WriteKubeconfig(kubeconfig, cfg); err != nil {
			t.Fatal(err)
		}
		// Run the operator with --kubeconfig kubeconfig.
	}
}
