package operators_test

import (
	"fmt"

	"github.com/opkit-dev/opkit/test/internal/operators"
)

// A line of a --record-reconciles file, as internal/actlog writes it.
func ExampleParseAct() {
	a, err := operators.ParseAct("write 1764166800000000000 PATCH /api/v1/namespaces/a/configmaps/m 4242")
	if err != nil {
		panic(err)
	}
	fmt.Println(a.Kind, a.What, a.PID)
	// Output: write PATCH /api/v1/namespaces/a/configmaps/m 4242
}
