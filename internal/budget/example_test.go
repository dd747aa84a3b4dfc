package budget_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/opkit-dev/opkit/internal/budget"
)

// Requests find their lane by what they are and whose context they carry;
// a lease renewal goes at once even when the bucket is empty.
func Example() {
	b, _ := budget.New(budget.Options{QPS: 1, Burst: 1})
	ctx := budget.WithController(context.Background(), "mirror")
	for _, url := range []string{
		"https://api/api/v1/namespaces/a/configmaps/b",
		"https://api/api/v1/configmaps?watch=true",
		"https://api/apis/authorization.k8s.io/v1/subjectaccessreviews",
	} {
		method := "GET"
		if url[len(url)-7:] == "reviews" {
			method = "POST"
		}
		lane, controller := budget.Classify(httptest.NewRequestWithContext(ctx, method, url, nil))
		fmt.Printf("%v %q\n", lane, controller)
	}
	fmt.Println(b.Wait(ctx, budget.LaneReconcile, "mirror")) // the burst
	fmt.Println(b.Wait(ctx, budget.LaneLease, ""))           // the bucket is empty: in debt
	// Output:
	// reconcile "mirror"
	// informer ""
	// webhook ""
	// <nil>
	// <nil>
}
