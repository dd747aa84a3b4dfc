package monitoring_test

import (
	"bufio"
	"bytes"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
)

// row is one metric of a metrics table: docs/metrics.md's list, or this
// directory's README's table of the pending metrics.
type row struct {
	file   string
	labels []string
	panels []string
	alerts []string
}

// metricsTable reads the rows of the table that starts after heading in
// file: "| `metric` | `label`, … | meaning | panel; … | alert, … |".
func metricsTable(t *testing.T, file, heading string, into map[string]row) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := bytes.Cut(b, []byte("\n"+heading+"\n"))
	if !ok {
		t.Fatalf("%s has no heading %q", file, heading)
	}
	sc := bufio.NewScanner(bytes.NewReader(section))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			break
		}
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 5 {
			t.Fatalf("%s: %q has %d cells, want 5 (metric, labels, meaning, panel, alerts)", file, line, len(cells))
		}
		name := strings.Trim(strings.TrimSpace(cells[0]), "`")
		if _, dup := into[name]; dup {
			t.Errorf("%s lists %s twice", file, name)
		}
		into[name] = row{
			file:   file,
			labels: list(strings.ReplaceAll(cells[1], "`", ""), ", "),
			panels: list(cells[3], "; "),
			alerts: list(cells[4], ", "),
		}
	}
}

func list(cell, sep string) []string {
	cell = strings.TrimSpace(cell)
	if cell == "—" {
		return nil
	}
	return strings.Split(cell, sep)
}

// documented returns docs/metrics.md's list and, for the metrics in
// pending, this directory's README's table of them.
func documented(t *testing.T) map[string]row {
	t.Helper()
	rows := map[string]row{}
	metricsTable(t, "../../docs/metrics.md", "## Series", rows)
	coming := map[string]row{}
	if len(pending) > 0 {
		metricsTable(t, "README.md", "## Metrics to come", coming)
	}
	if got := slices.Sorted(maps.Keys(coming)); !slices.Equal(got, slices.Sorted(slices.Values(pending))) {
		t.Errorf("README.md's metrics to come are %v, want pending's %v", got, slices.Sorted(slices.Values(pending)))
	}
	for k, v := range coming {
		if _, ok := rows[k]; ok {
			t.Errorf("%s is in docs/metrics.md and in pending: remove it from pending and from README.md's metrics to come", k)
		}
		rows[k] = v
	}
	return rows
}

// TestMetricsDocListsTheQueriedMetrics checks docs/metrics.md against the
// dashboard and the rules, both ways: every metric they query has a row,
// and every panel and alert a row names exists and queries that metric.
func TestMetricsDocListsTheQueriedMetrics(t *testing.T) {
	rows := documented(t)
	used := map[string]sets.Set[string]{} // metric -> sources querying it
	for _, r := range refs(t) {
		m := baseName(r.Metric)
		if used[m] == nil {
			used[m] = sets.New[string]()
		}
		used[m].Insert(r.Source)
	}
	for m, sources := range used {
		if _, ok := rows[m]; !ok {
			t.Errorf("%s query %s, which docs/metrics.md lacks", strings.Join(sets.List(sources), "; "), m)
		}
	}
	for m, r := range rows {
		var want []string
		for _, p := range r.panels {
			want = append(want, "dashboard.json: "+p)
		}
		for _, a := range r.alerts {
			want = append(want, "rules.yaml: "+a)
		}
		got := used[m]
		for _, w := range want {
			if !got.Has(w) {
				t.Errorf("%s says %s reads %s, but it does not (or does not exist)", r.file, strings.TrimPrefix(strings.TrimPrefix(w, "dashboard.json: "), "rules.yaml: "), m)
			}
		}
		for _, s := range sets.List(got) {
			if !slices.Contains(want, s) && !strings.HasPrefix(s, "dashboard.json: variable ") {
				t.Errorf("%s's row of %s does not name %s, which reads it", r.file, m, s)
			}
		}
	}
}
