package budget_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"go.uber.org/goleak"

	"github.com/opkit-dev/opkit/internal/budget"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestClassify(t *testing.T) {
	ctx := context.Background()
	ctl := budget.WithController(ctx, "mirror")
	for _, c := range []struct {
		name       string
		ctx        context.Context
		method     string
		url        string
		lane       budget.Lane
		controller string
	}{
		{"a reconcile's read", ctl, "GET", "/api/v1/namespaces/a/configmaps/b", budget.LaneReconcile, "mirror"},
		{"a reconcile's review", ctl, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", budget.LaneWebhook, ""},
		{"a token review", ctx, "POST", "/apis/authentication.k8s.io/v1/tokenreviews", budget.LaneWebhook, ""},
		{"a watch", ctx, "GET", "/api/v1/configmaps?allowWatchBookmarks=true&watch=true", budget.LaneInformer, ""},
		{"a named lane wins", budget.WithLane(ctl, budget.LaneLease), "PUT", "/apis/coordination.k8s.io/v1/namespaces/a/leases/l", budget.LaneLease, ""},
		{"a health check's read", budget.WithLane(ctx, budget.LaneHealth), "GET", "/api/v1/namespaces/a/configmaps/b", budget.LaneHealth, ""},
		{"a lease outside the lease client", ctx, "PUT", "/apis/coordination.k8s.io/v1/namespaces/a/leases/l", budget.LaneReconcile, budget.Unattributed},
		{"anything else", ctx, "POST", "/api/v1/namespaces/a/events", budget.LaneReconcile, budget.Unattributed},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequestWithContext(c.ctx, c.method, "https://api"+c.url, nil)
			lane, controller := budget.Classify(req)
			if lane != c.lane || controller != c.controller {
				t.Errorf("Classify = %v, %q; want %v, %q", lane, controller, c.lane, c.controller)
			}
		})
	}
}
