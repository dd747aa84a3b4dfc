package website

import (
	"context"
	"log/slog"
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opkit-dev/opkit/pkg/testenv"
)

var env *testenv.Environment

// One control plane for the package, with the Website CRD installed and
// the Records namespace made; both controllers run on it in turn.
func TestMain(m *testing.M) {
	// controller-runtime's logger, for TestWebsiteControllerRuntime.
	ctrl.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, nil)))
	testenv.Main(m, testenv.Options{CRDDirs: []string{"config/crd"}}, func(e *testenv.Environment) {
		env = e
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Records}}
		if _, err := e.Client().CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
			panic(err)
		}
	})
}
