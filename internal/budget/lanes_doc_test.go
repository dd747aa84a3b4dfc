package budget

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// docs/metrics.md lists the lane label's values, in priority order.
func TestMetricsDocListsTheLanes(t *testing.T) {
	doc, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for l := range numLanes {
		names = append(names, fmt.Sprintf("`%s`", l))
	}
	want := "by lane (" + strings.Join(names, ", ") + ")"
	if !strings.Contains(string(doc), want) {
		t.Errorf("docs/metrics.md does not say %q", want)
	}
}
