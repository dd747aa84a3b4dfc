package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The operator as deployed (-tags nolocal) links none of these. The test
// control plane is for --local only; go-cmp and text/template call
// reflect's MethodByName, which keeps the linker from dropping any exported
// method: go-cmp, linked in once through the cache's mutation report, made
// the binary 26 MB larger and the operator's RSS 15 MiB larger.
func TestDeployedBuildLinksNoHeavyPackages(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-tags", "nolocal", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, banned := range []string{
		"github.com/google/go-cmp/cmp",
		"text/template",
		"github.com/opkit-dev/opkit/pkg/testenv",
		"sigs.k8s.io/controller-runtime/pkg/envtest",
	} {
		for _, d := range deps {
			if d == banned {
				t.Errorf("the deployed operator links %s", banned)
			}
		}
	}
}
