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
	keys := []attribute.Key{
		tracing.Controller, tracing.Namespace, tracing.Name, tracing.Key, tracing.ReconcileID, tracing.Result,
		tracing.RequeueAfter, tracing.EventChanged, tracing.EventLag, tracing.LinkReason,
		tracing.Verb, tracing.Resource, tracing.Group,
	}
	var names []string
	for _, k := range keys {
		names = append(names, string(k))
		if !strings.Contains(doc, "`"+string(k)+"`") {
			t.Errorf("docs/tracing.md does not name %s", k)
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
