package monitoring_test

import (
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror/mirrortest"
	"github.com/opkit-dev/opkit/internal/freeport"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

// pending are the metrics the dashboard and rules query that opkit does not
// export yet. The scrape test skips them while they are absent, and fails,
// asking to remove them from this list, once they are served. None is
// pending now.
var pending []string

// targetLabels are the labels Prometheus adds to every series it scrapes
// (job, instance) or a Kubernetes service discovery adds (the rest): a scrape
// of the operator does not carry them, and every query may use them.
var targetLabels = sets.New("job", "instance", "namespace", "pod", "service", "container", "endpoint")

// notScraped are series Prometheus makes itself rather than scrapes.
var notScraped = sets.New("up")

// TestQueriesMatchScrape runs the sample operator, reconciles a few Mirrors
// and checks every series the dashboard and the rules read against its
// /metrics: the metric is served, and carries every label queried.
func TestQueriesMatchScrape(t *testing.T) {
	rs := refs(t)
	served := scrape(t, runOperator(t))
	checkDocumentedLabels(t, served)
	for _, r := range rs {
		if notScraped.Has(r.Metric) {
			continue
		}
		labels, ok := served[r.Metric]
		isPending := slices.Contains(pending, baseName(r.Metric))
		switch {
		case !ok && isPending:
			t.Logf("%s: %s is not served yet (pending)", r.Source, r.Metric)
			continue
		case !ok:
			t.Errorf("%s: queries %s, which the sample operator does not serve", r.Source, r.Metric)
			continue
		case isPending:
			t.Errorf("%s: %s is served now: remove %s from pending in scrape_test.go", r.Source, r.Metric, baseName(r.Metric))
		}
		for _, l := range r.Labels {
			if !targetLabels.Has(l) && !labels.Has(l) {
				t.Errorf("%s: queries label %s of %s, which has only %v", r.Source, l, r.Metric, sets.List(labels))
			}
		}
	}
}

// checkDocumentedLabels checks that docs/metrics.md lists every metric the
// sample operator serves but Go's and the process's, with its labels. A
// listed metric it does not serve after the workload (a panic counter, say)
// is not checked.
func checkDocumentedLabels(t *testing.T, served map[string]sets.Set[string]) {
	t.Helper()
	rows := documented(t)
	for name := range served {
		m := baseName(name)
		if _, ok := rows[m]; !ok && !strings.HasPrefix(m, "go_") && !strings.HasPrefix(m, "process_") && !strings.HasPrefix(m, "promhttp_") {
			t.Errorf("the sample operator serves %s, which docs/metrics.md lacks", m)
		}
	}
	for m, r := range rows {
		labels, ok := served[m]
		if !ok {
			labels, ok = served[m+"_count"] // a histogram
		}
		if !ok {
			if !notScraped.Has(m) {
				t.Logf("%s: %s is not served after the workload; its labels are not checked", r.file, m)
			}
			continue
		}
		if diff := cmp.Diff(sets.List(labels), slices.Sorted(slices.Values(r.labels)), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: the labels of %s differ from the scrape's (-scrape +doc):\n%s", r.file, m, diff)
		}
	}
}

// runOperator builds and starts the sample operator against the test's
// control plane, creates Mirrors, waits until they are Ready, and returns the
// URL of its /metrics.
func runOperator(t *testing.T) string {
	t.Helper()
	root, err := testenv.ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin, kubeconfig := filepath.Join(dir, "sample-operator"), filepath.Join(dir, "kubeconfig")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/sample-operator")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the sample operator: %v\n%s", err, out)
	}
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	metricsAddr, healthAddr := freeAddr(t), freeAddr(t)
	// Leader election on, as config/default runs it, so that the leader
	// metric is served. The webhook server off: the test's control plane
	// has no Service to reach it by, and no query reads its metrics.
	args := []string{"--kubeconfig", kubeconfig, "--metrics-bind-address", metricsAddr, "--health-probe-bind-address", healthAddr,
		"--leader-elect", "--leader-election-namespace", "default", "--webhook-port=0"}
	cmd := exec.Command(bin, args...)
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = io.Discard, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Errorf("stop the sample operator: %v", err)
		}
		if err := cmd.Wait(); err != nil {
			t.Errorf("sample operator: %v; it logged:\n%s", err, logs.String())
		}
	})
	workload(t)
	return "http://" + metricsAddr + "/metrics"
}

// freeAddr returns a loopback address nothing listens on now, whose port
// no listener on port 0 will be given (internal/freeport).
func freeAddr(t *testing.T) string {
	t.Helper()
	p, err := freeport.Port()
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
}

// workload creates two namespaces, two Mirrors that copy a ConfigMap each
// into them, updates one source, and waits until both Mirrors report Ready
// for their generation and the update reached a copy.
func workload(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cl, err := client.NewWithWatch(env.Config(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	home := env.Namespace(t)
	if err := mirrortest.GrantCopier(t.Context(), env.Client(), home, v1alpha1.DefaultServiceAccountName); err != nil {
		t.Fatal(err)
	}
	team := map[string]string{"monitoring-test": home}
	var targets []string
	for i := range 2 {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-t%d", home, i), Labels: map[string]string{
			"monitoring-test": home, mirror.AcceptLabel(home): "true",
		}}}
		create(t, cl, ns)
		targets = append(targets, ns.Name)
	}
	// Two Mirrors, each of its own source: two of one source would each
	// find the other's copies in the way.
	var sources []*corev1.ConfigMap
	for _, name := range []string{"a", "b"} {
		src := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: home, Name: "source-" + name}, Data: map[string]string{"v": "1"}}
		create(t, cl, src)
		sources = append(sources, src)
		create(t, cl, &v1alpha1.Mirror{
			ObjectMeta: metav1.ObjectMeta{Namespace: home, Name: name},
			Spec: v1alpha1.MirrorSpec{
				Source:            v1alpha1.SourceRef{Kind: "ConfigMap", Name: src.Name},
				NamespaceSelector: metav1.LabelSelector{MatchLabels: team},
			},
		})
	}
	sources[0].Data["v"] = "2"
	if err := cl.Update(ctx, sources[0]); err != nil {
		t.Fatal(err)
	}
	waitReady(t, cl, home, "a", "b")
	waitCopy(t, cl, targets[0], "source-a", "2")
}

// scrape returns, for each series name served at url, its label names. A
// histogram's are served as <name>_bucket (with le), _sum and _count.
func scrape(t *testing.T, url string) map[string]sets.Set[string] {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scrape the sample operator: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape the sample operator: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse the scrape: %v", err)
	}
	served := map[string]sets.Set[string]{}
	add := func(name string, m *dto.Metric, extra ...string) {
		if served[name] == nil {
			served[name] = sets.New[string]()
		}
		for _, l := range m.GetLabel() {
			served[name].Insert(l.GetName())
		}
		served[name].Insert(extra...)
	}
	for _, name := range slices.Sorted(maps.Keys(families)) {
		f := families[name]
		for _, m := range f.GetMetric() {
			if f.GetType() == dto.MetricType_HISTOGRAM {
				add(name+"_bucket", m, "le")
				add(name+"_sum", m)
				add(name+"_count", m)
				continue
			}
			add(name, m)
		}
	}
	return served
}
