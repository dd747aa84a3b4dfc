package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// docs/versioning.md's table of versions says what the go.mod files it names
// require: every module in a row's first cell at the row's version, the Go
// row the go directive, the Kubernetes minor client-go's; and the versions
// the Makefile's test matrix runs.
func TestVersioningTableMatchesGoMod(t *testing.T) {
	rows := versionRows(t)
	if len(rows) == 0 {
		t.Fatal("docs/versioning.md has no table of versions (| What | Version | Pinned in |)")
	}
	mods := map[string]*modfile.File{}
	for _, r := range rows {
		what, version := r[0], r[1]
		file := strings.Trim(strings.Fields(r[2])[0], "`")
		if file == "Makefile" {
			if got := makeVariable(t, "MATRIX_VERSIONS"); got != version {
				t.Errorf("docs/versioning.md says %s for %s; the Makefile's MATRIX_VERSIONS is %s", version, what, got)
			}
			continue
		}
		if mods[file] == nil {
			mods[file] = parseGoMod(t, file)
		}
		want := map[string]string{}
		switch {
		case strings.HasPrefix(what, "Go,"):
			want["the go directive"] = mods[file].Go.Version
		case strings.HasPrefix(what, "Kubernetes, client-go's minor"):
			minor := strings.TrimPrefix(semver.MajorMinor(required(mods[file], "k8s.io/client-go")), "v0.")
			want["client-go's minor"] = "1." + minor
		default:
			for _, m := range backticked(what) {
				want[m] = required(mods[file], m)
			}
		}
		if len(want) == 0 {
			t.Errorf("docs/versioning.md: the row %q names nothing this test checks", what)
		}
		for name, v := range want {
			if v != version {
				t.Errorf("docs/versioning.md says %s for %s; %s has %s", version, name, file, v)
			}
		}
	}
}

// versionRows returns the cells of the rows of the table whose header is
// | What | Version | Pinned in |.
func versionRows(t *testing.T) [][]string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "versioning.md"))
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	in := false
	for _, line := range strings.Split(string(doc), "\n") {
		switch {
		case strings.HasPrefix(line, "| What | Version | Pinned in |"):
			in = true
		case !in || strings.HasPrefix(line, "|---"):
		case !strings.HasPrefix(line, "|"):
			in = false
		default:
			var cells []string
			for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
				cells = append(cells, strings.TrimSpace(c))
			}
			if len(cells) != 3 {
				t.Fatalf("docs/versioning.md: the row %q has %d cells, not 3", line, len(cells))
			}
			rows = append(rows, cells)
		}
	}
	return rows
}

func parseGoMod(t *testing.T, file string) *modfile.File {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.ParseLax(file, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// required is the version file requires of module, or "none".
func required(f *modfile.File, module string) string {
	for _, r := range f.Require {
		if r.Mod.Path == module {
			return r.Mod.Version
		}
	}
	return "none"
}

// backticked returns the `quoted` words of s.
func backticked(s string) []string {
	parts := strings.Split(s, "`")
	var out []string
	for i := 1; i < len(parts); i += 2 {
		out = append(out, parts[i])
	}
	return out
}

// makeVariable returns the value the Makefile gives name (NAME ?= value).
func makeVariable(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\s*\??:?=\s*(.*)$`).FindStringSubmatch(string(data))
	if m == nil {
		t.Fatalf("the Makefile does not set %s", name)
	}
	return strings.Join(strings.Fields(m[1]), " ")
}
