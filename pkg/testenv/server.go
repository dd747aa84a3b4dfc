package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
)

// VersionEnv names the environment variable that selects the Kubernetes
// version of the control plane when Options.Version is unset: an exact
// version ("1.34.4") or a minor ("1.34", the newest patch built in the
// shared directory). make test-matrix sets it for each cell; "opkit
// envtest --version" builds the binaries it names.
const VersionEnv = "OPKIT_K8S_VERSION"

// Version returns the Kubernetes version Start runs when Options.Version
// is unset: VersionEnv's, resolved to a built version, else
// DefaultVersion.
func Version() (string, error) {
	return resolveVersion(os.Getenv(VersionEnv))
}

func resolveVersion(v string) (string, error) {
	v = strings.TrimPrefix(v, "v")
	if v == "" {
		return DefaultVersion, nil
	}
	if strings.Count(v, ".") >= 2 {
		return v, nil
	}
	// A minor: the newest patch built in the shared directory.
	shared, err := SharedBinaryDir(v)
	if err != nil {
		return "", err
	}
	entries, _ := os.ReadDir(filepath.Dir(shared))
	var newest *version.Version
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), v+".") || in(filepath.Join(filepath.Dir(shared), e.Name())).check() != nil {
			continue
		}
		if pv, err := version.ParseGeneric(e.Name()); err == nil && (newest == nil || pv.GreaterThan(newest)) {
			newest = pv
		}
	}
	if newest == nil {
		return "", fmt.Errorf("%w: no Kubernetes %s.x is built in %s; run '%s --version %s'", ErrBinariesMissing, v, filepath.Dir(shared), envtestCommand, v)
	}
	return newest.String(), nil
}

// knownGate matches a feature gate in kube-apiserver --help: "kube:Name=
// true|false (ALPHA - default=false)" since 1.35, "Name=true|false (...)"
// before.
var knownGate = regexp.MustCompile(`(?m)^\s+(?:kube:)?([A-Za-z0-9]+)=true\|false \(`)

// knownFeatureGates returns the feature gates the kube-apiserver binary at
// path knows, from its --help.
func knownFeatureGates(path string) (map[string]bool, error) {
	out, err := exec.Command(path, "--help").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s --help: %w", path, err)
	}
	known := map[string]bool{}
	for _, m := range knownGate.FindAllStringSubmatch(string(out), -1) {
		known[m[1]] = true
	}
	if len(known) == 0 {
		return nil, fmt.Errorf("%s --help lists no feature gates", path)
	}
	return known, nil
}

// gatesFor merges required and optional gates for a kube-apiserver that
// knows the gates in known: an optional gate it does not know is left
// out; a required one is an error naming the server's version.
func gatesFor(required, optional, known map[string]bool, serverVersion string) (map[string]bool, error) {
	gates := map[string]bool{}
	for name, on := range optional {
		if known[name] {
			gates[name] = on
		}
	}
	var unknown []string
	for name, on := range required {
		if !known[name] {
			unknown = append(unknown, name)
		}
		gates[name] = on
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, fmt.Errorf("kube-apiserver %s does not know the feature gate(s) %s (Options.FeatureGates); name a gate only some versions know in Options.OptionalFeatureGates, and skip the tests that need it with Environment.RequireFeatureGate", serverVersion, strings.Join(unknown, ", "))
	}
	return gates, nil
}

// ServerVersion returns the version kube-apiserver reports at /version,
// such as "v1.34.4".
func (e *Environment) ServerVersion() string {
	return e.serverVersion
}

// FeatureGate reports whether kube-apiserver has feature gate name on,
// and whether it knows the gate at all, as its kubernetes_feature_enabled
// metric said when Start returned.
func (e *Environment) FeatureGate(name string) (on, known bool) {
	on, known = e.serverGates[name]
	return on, known
}

// RequireFeatureGate skips t, with a reason naming the gate and the
// server's version, unless kube-apiserver has feature gate name on.
func (e *Environment) RequireFeatureGate(t testing.TB, name string) {
	t.Helper()
	switch on, known := e.FeatureGate(name); {
	case !known:
		t.Skipf("needs feature gate %s, which kube-apiserver %s does not know", name, e.serverVersion)
	case !on:
		t.Skipf("needs feature gate %s, which kube-apiserver %s has off (Options.FeatureGates or OptionalFeatureGates turn it on)", name, e.serverVersion)
	}
}

// RequireResource skips t, with a reason naming the resource and the
// server's version, unless kube-apiserver serves gvr.
func (e *Environment) RequireResource(t testing.TB, gvr schema.GroupVersionResource) {
	t.Helper()
	list, err := e.client.Discovery().ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if err == nil {
		for _, r := range list.APIResources {
			if r.Name == gvr.Resource {
				return
			}
		}
	}
	t.Skipf("needs %s, which kube-apiserver %s does not serve", gvr, e.serverVersion)
}

// learnServer reads the running server's version and feature gates.
func (e *Environment) learnServer(ctx context.Context) error {
	info, err := e.client.Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("read /version: %w", err)
	}
	e.serverVersion = info.GitVersion
	body, err := e.client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("read /metrics for the feature gates: %w", err)
	}
	e.serverGates = parseFeatureMetric(string(body))
	return nil
}

var featureMetric = regexp.MustCompile(`(?m)^kubernetes_feature_enabled\{name="([^"]+)",stage="[^"]*"\} ([01])$`)

// parseFeatureMetric reads kube-apiserver's kubernetes_feature_enabled
// metric: each gate it knows, and whether it is on.
func parseFeatureMetric(body string) map[string]bool {
	gates := map[string]bool{}
	for _, m := range featureMetric.FindAllStringSubmatch(body, -1) {
		gates[m[1]] = m[2] == "1"
	}
	return gates
}

// binaryVersion returns what the kube-apiserver at path says its version
// is ("Kubernetes v1.34.4"), or its path if it says nothing.
func binaryVersion(path string) string {
	out, err := exec.Command(path, "--version").Output()
	if v := strings.TrimSpace(string(out)); err == nil && v != "" {
		return strings.TrimPrefix(v, "Kubernetes ")
	}
	return path
}
