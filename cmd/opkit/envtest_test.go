package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/opkit-dev/opkit/internal/envtest"
)

// --list names every pinned version; --print --version resolves a minor to
// its pinned patch's directory; an unpinned version is refused, naming the
// pinned ones, before anything is built.
func TestEnvtestVersions(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	var out, errs strings.Builder
	if err := run(t.Context(), []string{"envtest", "--list"}, &out, &errs); err != nil {
		t.Fatal(err)
	}
	for _, v := range envtest.Versions() {
		if !strings.Contains(out.String(), v+"\tnot built\n") {
			t.Errorf("envtest --list with an empty cache does not say %s is not built:\n%s", v, out.String())
		}
	}
	oldest := envtest.Versions()[0]
	minor := oldest[:strings.LastIndex(oldest, ".")]
	out.Reset()
	if err := run(t.Context(), []string{"envtest", "--print", "--version", minor}, &out, &errs); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out.String()); filepath.Base(got) != oldest {
		t.Errorf("envtest --print --version %s = %q, want the directory of %s", minor, got, oldest)
	}
	err := run(t.Context(), []string{"envtest", "--version", "1.20"}, &out, &errs)
	if err == nil || !strings.Contains(err.Error(), "1.20 is not pinned") || !strings.Contains(err.Error(), oldest) {
		t.Errorf("envtest --version 1.20 = %v, want an error naming the pinned versions", err)
	}
}
