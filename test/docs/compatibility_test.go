package docs_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/opkit-dev/opkit/internal/envtest"
)

// docs/compatibility.md's table is a run of make test-matrix: a row per
// cell, the Makefile's MATRIX_VERSIONS with the default Go and the newest
// with MATRIX_NEXT_GO, and each version one that opkit pins (so that
// 'opkit envtest --version' builds it).
func TestCompatibilityTableMatchesTheMatrix(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "docs", "compatibility.md"))
	if err != nil {
		t.Fatal(err)
	}
	var cells []string
	in := false
	for _, line := range strings.Split(string(doc), "\n") {
		switch {
		case strings.HasPrefix(line, "| Kubernetes | Go |"):
			in = true
		case !in || strings.HasPrefix(line, "|---"):
		case !strings.HasPrefix(line, "|"):
			in = false
		default:
			f := strings.Split(strings.Trim(line, "|"), "|")
			cells = append(cells, strings.TrimSpace(f[0])+" "+strings.TrimSpace(f[1]))
		}
	}
	if len(cells) == 0 {
		t.Fatal("docs/compatibility.md has no table of cells (| Kubernetes | Go | ...)")
	}
	versions := strings.Fields(makeVariable(t, "MATRIX_VERSIONS"))
	var kubes, nextGo []string
	for _, c := range cells {
		kube, goVersion, _ := strings.Cut(c, " ")
		if goVersion == makeVariable(t, "MATRIX_NEXT_GO") {
			nextGo = append(nextGo, kube)
			continue
		}
		kubes = append(kubes, kube)
		if !slices.Contains(envtest.Versions(), kube) {
			t.Errorf("docs/compatibility.md has a cell of Kubernetes %s, which is not pinned (pinned: %v)", kube, envtest.Versions())
		}
	}
	if !slices.Equal(kubes, versions) {
		t.Errorf("docs/compatibility.md's cells with the default Go are Kubernetes %v; the Makefile's MATRIX_VERSIONS are %v: run make test-matrix and copy bin/matrix/table.md", kubes, versions)
	}
	if newest := versions[len(versions)-1]; !slices.Equal(nextGo, []string{newest}) {
		t.Errorf("docs/compatibility.md's cells with %s are %v, want the newest version, %s", makeVariable(t, "MATRIX_NEXT_GO"), nextGo, newest)
	}
}
