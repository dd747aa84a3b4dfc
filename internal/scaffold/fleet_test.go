package scaffold

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// opkit init --fleet makes a fleet operator: cmd/fleet.go sets up the
// fleet, main.go calls it with its --fleet-namespace, the Role reads the
// members' Secrets there, and PROJECT records it, so that opkit upgrade
// renders the same files again. Without --fleet, none of it.
func TestInitFleet(t *testing.T) {
	for _, fleet := range []bool{true, false} {
		opts := InitOptions{Module: "example.com/acme-operator", OpkitVersion: "v0.1.0", Fleet: fleet}
		opts.defaults()
		fs, err := initFiles(opts)
		if err != nil {
			t.Fatal(err)
		}
		has := map[string]bool{
			"cmd/fleet.go":           fs["cmd/fleet.go"] != nil && strings.Contains(string(fs["cmd/fleet.go"]), "fleet.KubeconfigSecrets{"),
			"cmd/fleet_test.go":      fs["cmd/fleet_test.go"] != nil,
			"main.go's setupFleet":   strings.Contains(string(fs["cmd/main.go"]), "setupFleet(mgr, f.fleetNamespace, local != nil)"),
			"main.go's flag":         strings.Contains(string(fs["cmd/main.go"]), `"fleet-namespace", "acme-operator-system"`),
			"main_test.go's default": strings.Contains(string(fs["cmd/main_test.go"]), `fleetNamespace: "acme-operator-system"`),
			"the Role's secrets":     strings.Contains(string(fs["config/rbac/role.yaml"]), "- secrets"),
		}
		for what, ok := range has {
			if ok != fleet {
				t.Errorf("init with Fleet %t: has %s: %t", fleet, what, ok)
			}
		}
		p := &Project{}
		if err := yaml.UnmarshalStrict(fs[ProjectFile], p); err != nil || p.Fleet != fleet {
			t.Errorf("init with Fleet %t: PROJECT = %+v, %v", fleet, p, err)
		}
		gen, err := generate(templates, p, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"cmd/main.go", "cmd/main_test.go", "cmd/fleet.go", "cmd/fleet_test.go"} {
			if string(gen[path]) != string(fs[path]) {
				t.Errorf("init with Fleet %t: %s rendered again from PROJECT differs from init's", fleet, path)
			}
		}
	}
}
