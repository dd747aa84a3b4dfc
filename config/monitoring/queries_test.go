package monitoring_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/opkit-dev/opkit/pkg/testenv"
)

// query is one PromQL expression of the dashboard or the rules.
type query struct {
	Source string `json:"source"` // "rules.yaml: OpkitTargetDown", "dashboard.json: Reconcile rate"
	Expr   string `json:"expr"`
	// label is a label the query reads from the series that Expr selects
	// besides those in Expr: a template variable's label_values.
	label string
}

// ref is one series a query reads, as promqlrefs reports it.
type ref struct {
	Source string   `json:"source"`
	Metric string   `json:"metric"`
	Labels []string `json:"labels"`
}

// rulesFile is the shape of rules.yaml, and of a PrometheusRule's spec.
type rulesFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Expr        string            `json:"expr"`
			For         string            `json:"for"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

func readRules(t *testing.T) rulesFile {
	t.Helper()
	var f rulesFile
	unmarshal(t, "rules.yaml", &f)
	return f
}

func unmarshal(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, v); err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
}

// TestPrometheusRuleHoldsTheRules keeps the two forms of the rules the same.
func TestPrometheusRuleHoldsTheRules(t *testing.T) {
	var pr struct {
		APIVersion string         `json:"apiVersion"`
		Kind       string         `json:"kind"`
		Metadata   map[string]any `json:"metadata"`
		Spec       rulesFile      `json:"spec"`
	}
	unmarshal(t, "prometheus_rule.yaml", &pr)
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" {
		t.Errorf("prometheus_rule.yaml holds a %s %s, want a monitoring.coreos.com/v1 PrometheusRule", pr.APIVersion, pr.Kind)
	}
	if diff := cmp.Diff(readRules(t), pr.Spec); diff != "" {
		t.Errorf("prometheus_rule.yaml's groups differ from rules.yaml's (-rules.yaml +prometheus_rule.yaml):\n%s", diff)
	}
}

// TestEveryAlertHasARunbook checks the annotations every alert carries and
// that config/monitoring/README.md has the section its runbook_url points at.
func TestEveryAlertHasARunbook(t *testing.T) {
	doc, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			for _, a := range []string{"summary", "description", "runbook_url"} {
				if r.Annotations[a] == "" {
					t.Errorf("alert %s has no %s annotation", r.Alert, a)
				}
			}
			want := "https://github.com/opkit-dev/opkit/blob/main/config/monitoring/README.md#" + strings.ToLower(r.Alert)
			if r.Annotations["runbook_url"] != want {
				t.Errorf("alert %s: runbook_url %q, want %q", r.Alert, r.Annotations["runbook_url"], want)
			}
			if !bytes.Contains(doc, []byte("\n### "+r.Alert+"\n")) {
				t.Errorf("config/monitoring/README.md has no section \"### %s\", which the alert's runbook_url points at", r.Alert)
			}
			if s := r.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("alert %s: severity %q, want warning or critical", r.Alert, s)
			}
		}
	}
}

// queries returns every PromQL expression of the rules and the dashboard.
func queries(t *testing.T) []query {
	t.Helper()
	var qs []query
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			qs = append(qs, query{Source: "rules.yaml: " + r.Alert, Expr: r.Expr})
		}
	}
	return append(qs, dashboardQueries(t)...)
}

type panel struct {
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

type dashboard struct {
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

var (
	// grafanaVar is a template variable in a query; variables expand to
	// regular expressions (every one of ours is multi-valued) or, for
	// $__rate_interval, to a duration.
	grafanaVar  = regexp.MustCompile(`\$\{?(\w+)\}?`)
	labelValues = regexp.MustCompile(`^label_values\((.*),\s*(\w+)\)$`)
)

func expand(expr string) string {
	return grafanaVar.ReplaceAllStringFunc(expr, func(v string) string {
		if strings.Contains(v, "__rate_interval") {
			return "5m"
		}
		return ".*"
	})
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	var d dashboard
	b, err := os.ReadFile("dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("decode dashboard.json: %v", err)
	}
	return d
}

func dashboardQueries(t *testing.T) []query {
	t.Helper()
	d := readDashboard(t)
	var qs []query
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(map[string]any)
		s, _ := q["query"].(string)
		m := labelValues.FindStringSubmatch(s)
		if m == nil {
			t.Fatalf("dashboard.json: variable %s: query %q is not label_values(<selector>, <label>)", v.Name, s)
		}
		qs = append(qs, query{Source: "dashboard.json: variable " + v.Name, Expr: expand(m[1]), label: m[2]})
	}
	for _, p := range allPanels(d.Panels) {
		for _, tg := range p.Targets {
			qs = append(qs, query{Source: "dashboard.json: " + p.Title, Expr: expand(tg.Expr)})
		}
	}
	return qs
}

func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

// refs parses every query with Prometheus's parser (promqlrefs, built from
// the pinned promtool module) and returns the series they read.
func refs(t *testing.T) []ref {
	t.Helper()
	qs := queries(t)
	in, err := json.Marshal(qs)
	if err != nil {
		t.Fatal(err)
	}
	root, err := testenv.ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "promqlrefs")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./promqlrefs")
	build.Dir = filepath.Join(root, "hack", "tools", "promtool")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build promqlrefs in hack/tools/promtool: %v\n%s", err, out)
	}
	var stdout, stderr bytes.Buffer
	run := exec.CommandContext(t.Context(), bin)
	run.Stdin, run.Stdout, run.Stderr = bytes.NewReader(in), &stdout, &stderr
	if err := run.Run(); err != nil {
		t.Fatalf("promqlrefs: %v\n%s", err, stderr.String())
	}
	var rs []ref
	if err := json.Unmarshal(stdout.Bytes(), &rs); err != nil {
		t.Fatalf("decode the output of promqlrefs: %v", err)
	}
	for _, q := range qs {
		if q.label == "" {
			continue
		}
		for i := range rs {
			if rs[i].Source == q.Source {
				rs[i].Labels = append(rs[i].Labels, q.label)
			}
		}
	}
	return rs
}

// baseName is the metric a series belongs to: a histogram's _bucket, _sum
// and _count series are its own. Every histogram opkit serves is in
// seconds, which tells them from a counter that happens to end in _count.
func baseName(series string) string {
	for _, s := range []string{"_bucket", "_sum", "_count"} {
		if b, ok := strings.CutSuffix(series, s); ok && strings.HasSuffix(b, "_seconds") {
			return b
		}
	}
	return series
}
