package tracing_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/tracing"
)

// docs/tracing.md names every attribute opkit sets, and none it does not.
func TestDocsNameTheAttributes(t *testing.T) {
	b, err := os.ReadFile("../../docs/tracing.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	keys := map[string]attribute.Key{
		"ControllerKey": tracing.ControllerKey, "NamespaceKey": tracing.NamespaceKey, "NameKey": tracing.NameKey,
		"KeyKey": tracing.KeyKey, "ReconcileIDKey": tracing.ReconcileIDKey, "ResultKey": tracing.ResultKey,
		"RequeueAfterKey": tracing.RequeueAfterKey, "EventChangedKey": tracing.EventChangedKey,
		"EventLagKey": tracing.EventLagKey, "LinkReasonKey": tracing.LinkReasonKey,
		"VerbKey": tracing.VerbKey, "ResourceKey": tracing.ResourceKey, "GroupKey": tracing.GroupKey,
	}
	var names []string
	for goName, k := range keys {
		names = append(names, string(k))
		if !strings.Contains(doc, "`"+string(k)+"`") {
			t.Errorf("docs/tracing.md does not name %s", k)
		}
		if !strings.Contains(doc, "`tracing."+goName+"`") {
			t.Errorf("docs/tracing.md does not name the key of %s, tracing.%s", k, goName)
		}
	}
	// In the tables, the keys of a row's attributes are in the next
	// column, in the same order.
	for _, row := range regexp.MustCompile("(?m)^\\| (`[^|]*`) \\| (`tracing\\.[^|]*`) \\|").FindAllStringSubmatch(doc, -1) {
		attrs, goNames := strings.Split(row[1], ", "), strings.Split(row[2], ", ")
		if len(attrs) != len(goNames) {
			t.Errorf("docs/tracing.md: the row of %s names %d keys, want %d", row[1], len(goNames), len(attrs))
			continue
		}
		for i, attr := range attrs {
			goName := strings.TrimPrefix(strings.Trim(goNames[i], "`"), "tracing.")
			if want := "`" + string(keys[goName]) + "`"; attr != want {
				t.Errorf("docs/tracing.md gives %s as the key of %s; it is the key of %s", goNames[i], attr, want)
			}
		}
	}
	for _, m := range regexp.MustCompile("`((?:opkit|k8s)\\.[a-z_.]+)`").FindAllStringSubmatch(doc, -1) {
		if !slices.Contains(names, m[1]) {
			t.Errorf("docs/tracing.md names %s, which package tracing does not set", m[1])
		}
	}
	for _, v := range []string{imetrics.ResultSuccess, imetrics.ResultError, imetrics.ResultRequeue, imetrics.ResultRequeueAfter} {
		if !strings.Contains(doc, "`"+v+"`") {
			t.Errorf("docs/tracing.md does not name the result %s", v)
		}
	}
}
