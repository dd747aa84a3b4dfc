package testenv

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// kube-apiserver --help lists gates with a component prefix since 1.35
// and without one before.
func TestKnownGatePattern(t *testing.T) {
	help := `      --feature-gates colonSeparatedMultimapStringString   Comma-separated list...Options are:
                                                           kube:APIResponseCompression=true|false (BETA - default=true)
                                                           kube:ShardedListAndWatch=true|false (ALPHA - default=false)
      --feature-gates mapStringBool    A set of key=value pairs ... Options are:
                                                APIServingWithRoutine=true|false (ALPHA - default=false)
                                                AllAlpha=true|false (ALPHA - default=false)
      --goaway-chance float   To prevent HTTP/2 clients from getting stuck on a single apiserver, randomly close a connection (GOAWAY).
`
	got := map[string]bool{}
	for _, m := range knownGate.FindAllStringSubmatch(help, -1) {
		got[m[1]] = true
	}
	want := map[string]bool{"APIResponseCompression": true, "ShardedListAndWatch": true, "APIServingWithRoutine": true, "AllAlpha": true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("gates found (-want +got):\n%s", diff)
	}
}

func TestParseFeatureMetric(t *testing.T) {
	body := `# HELP kubernetes_feature_enabled [BETA] This metric records the data about the stage and enablement of a k8s feature.
# TYPE kubernetes_feature_enabled gauge
kubernetes_feature_enabled{name="AllAlpha",stage="ALPHA"} 0
kubernetes_feature_enabled{name="WatchList",stage="BETA"} 1
kubernetes_feature_enabled{name="AggregatedDiscoveryEndpoint",stage=""} 1
other_metric{name="X",stage="ALPHA"} 1
`
	want := map[string]bool{"AllAlpha": false, "WatchList": true, "AggregatedDiscoveryEndpoint": true}
	if diff := cmp.Diff(want, parseFeatureMetric(body)); diff != "" {
		t.Errorf("parseFeatureMetric (-want +got):\n%s", diff)
	}
}

func TestGatesFor(t *testing.T) {
	known := map[string]bool{"A": true, "B": true}
	got, err := gatesFor(map[string]bool{"A": false}, map[string]bool{"B": true, "C": true}, known, "v1.34.4")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]bool{"A": false, "B": true}, got); diff != "" {
		t.Errorf("gatesFor (-want +got):\n%s", diff)
	}
	if _, err := gatesFor(map[string]bool{"C": true}, nil, known, "v1.34.4"); err == nil {
		t.Error("gatesFor with an unknown required gate: no error")
	}
}
