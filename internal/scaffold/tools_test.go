package scaffold

import (
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/mod/modfile"
)

// toolsOf is the tool directives of a generated project's go.mod file.
func toolsOf(t *testing.T, project files, name string) []string {
	t.Helper()
	f, err := modfile.Parse(name, project[name], nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tool := range f.Tool {
		out = append(out, tool.Path)
	}
	return out
}

// TestToolsRunFromTheBuildCache: opkit.mk runs each pinned tool with go
// tool (promtool with go run, for its build tag) from its module under
// hack/tools, so that the binary lives in Go's build cache, where every
// project finds it, and never in the project's bin/.
func TestToolsRunFromTheBuildCache(t *testing.T) {
	opts := InitOptions{Module: "example.com/acme-operator", OpkitVersion: "v0.1.0"}
	opts.defaults()
	project, err := initFiles(opts)
	if err != nil {
		t.Fatal(err)
	}
	mk := string(project["opkit.mk"])
	got := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^(STATICCHECK|CONTROLLER_GEN|PROMTOOL|KUSTOMIZE) +:= (.*)$`).FindAllStringSubmatch(mk, -1) {
		got[m[1]] = m[2]
	}
	tools := toolsOf(t, project, "hack/tools/go.mod")
	promtool := toolsOf(t, project, "hack/tools/promtool/go.mod")
	kustomize := toolsOf(t, project, "hack/tools/kustomize/go.mod")
	if len(tools) != 2 || len(promtool) != 1 || !slices.Equal(kustomize, []string{"sigs.k8s.io/kustomize/kustomize/v5"}) {
		t.Fatalf("tools %q, %q and %q, want staticcheck and controller-gen, promtool, and kustomize", tools, promtool, kustomize)
	}
	want := map[string]string{
		"STATICCHECK":    "$(GO) tool -modfile=$(TOOLS)/go.mod " + path.Base(tools[0]),
		"CONTROLLER_GEN": "$(GO) tool -modfile=$(TOOLS)/go.mod " + path.Base(tools[1]),
		"PROMTOOL":       "$(GO) run -modfile=$(TOOLS)/promtool/go.mod -tags remove_all_sd " + promtool[0],
		"KUSTOMIZE":      "$(GO) tool -modfile=$(TOOLS)/kustomize/go.mod kustomize", // go tool names v5 by its parent
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("opkit.mk's tools (-want +got):\n%s", diff)
	}
	if strings.Contains(mk, "-o $@") {
		t.Error("opkit.mk builds a tool into bin/; run it with go tool instead")
	}
}

// TestToolsSharedAcrossProjects: two projects, whose hack/tools modules
// differ in their paths only, run the same binary from Go's build cache,
// so the second project builds no tool.
func TestToolsSharedAcrossProjects(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds staticcheck and controller-gen (once per build cache)")
	}
	var dirs []string
	var project files
	for _, module := range []string{"example.com/acme-operator", "example.org/other-operator"} {
		dir := t.TempDir()
		opts := InitOptions{Module: module, OpkitReplace: opkitRoot(t)}
		opts.defaults()
		var err error
		if project, err = initFiles(opts); err != nil {
			t.Fatal(err)
		}
		if err := project.write(dir); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	for _, tool := range toolsOf(t, project, "hack/tools/go.mod") {
		name := path.Base(tool)
		toolPath(t, dirs[0], name) // builds it into the cache if it is not there
		first, second := toolPath(t, dirs[0], name), toolPath(t, dirs[1], name)
		if first != second {
			t.Errorf("%s: the first project runs %s, the second %s; want one binary", name, first, second)
		}
		if gocache := goEnv(t, "GOCACHE"); !strings.HasPrefix(first, gocache+string(filepath.Separator)) {
			t.Errorf("%s runs from %s, not from the build cache %s", name, first, gocache)
		}
	}
}

// toolPath is the binary that go tool runs for name in the project dir.
func toolPath(t *testing.T, dir, name string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "tool", "-n", "-modfile=hack/tools/go.mod", name)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go tool -n %s in %s: %v", name, dir, err)
	}
	return strings.TrimSpace(string(out))
}

func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}
