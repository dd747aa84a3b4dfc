package repo

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRootPassesOverNestedModules(t *testing.T) {
	top := t.TempDir()
	nested := filepath.Join(top, "hack", "bench")
	deeper := filepath.Join(nested, "e2e")
	if err := os.MkdirAll(deeper, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(dir, content string) {
		if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(top, "// opkit\nmodule "+Module+"\n\ngo 1.26.0\n")
	write(nested, "module "+Module+"/hack/bench\n")
	for _, dir := range []string{top, nested, deeper} {
		got, err := Root(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got != top {
			t.Errorf("Root(%s) = %s, want %s", dir, got, top)
		}
	}
	if _, err := Root(t.TempDir()); err == nil {
		t.Error("Root of a directory outside any opkit checkout succeeded")
	}
}
