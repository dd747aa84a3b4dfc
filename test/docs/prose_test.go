package docs_test

import (
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"golang.org/x/mod/modfile"

	"github.com/opkit-dev/opkit/pkg/testenv"
)

// Facts that prose states and no compiler reads drift: an inventory, a
// layout table, a time estimate, a "not yet" list. The tests below hold
// each such statement to the tree.

// read returns the file at rel, relative to the module root.
func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// exists reports whether rel, relative to the module root, exists.
func exists(rel string) bool {
	_, err := os.Stat(filepath.Join(root, rel))
	return err == nil
}

// goPackages returns the directories under dir (relative to the root)
// that hold a Go package's non-test files, skipping testdata and internal
// directories: the packages a user can import.
func goPackages(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "internal") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			if !slices.Contains(out, rel) {
				out = append(out, filepath.ToSlash(rel))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// subdirs returns the directories directly under dir, relative to the root.
func subdirs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(root, dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, dir+"/"+e.Name())
		}
	}
	return out
}

// section returns the text of the Markdown section under heading (a
// whole line, such as "## Layout") up to the next heading of the same or
// a higher level.
func section(t *testing.T, file, heading string) string {
	t.Helper()
	text := read(t, file)
	_, after, ok := strings.Cut(text, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no heading %q", file, heading)
	}
	level := strings.Index(heading, " ")
	for _, l := range strings.SplitAfter(after, "\n") {
		if i := strings.Index(l, " "); strings.HasPrefix(l, "#") && i > 0 && i <= level && strings.Trim(l[:i], "#") == "" {
			after, _, _ = strings.Cut(after, l)
			break
		}
	}
	return after
}

var (
	// layoutRow is a row of the Layout table: its first cell names paths,
	// which exist unless the row says "(not committed)".
	layoutRow = regexp.MustCompile("(?m)^\\| (`[^|]*) \\|(.*)$")
	codeSpan  = regexp.MustCompile("`([^`]+)`")
)

// The Layout table in docs/developing.md names every package under pkg/
// and every directory under cmd/, examples/ and test/, and every path it
// names exists.
func TestLayoutListsWhatExists(t *testing.T) {
	const file = "docs/developing.md"
	listed := map[string]bool{}
	for _, row := range layoutRow.FindAllStringSubmatch(section(t, file, "## Layout"), -1) {
		for _, m := range codeSpan.FindAllStringSubmatch(row[1], -1) {
			p := strings.TrimSuffix(m[1], "/")
			listed[p] = true
			if !exists(p) && !strings.Contains(row[2], "(not committed)") {
				t.Errorf("%s's Layout table names %s, which does not exist: remove its row, or fix the path", file, m[1])
			}
		}
	}
	want := goPackages(t, "pkg")
	for _, dir := range []string{"cmd", "examples", "test"} {
		want = append(want, subdirs(t, dir)...)
	}
	for _, p := range want {
		if !listed[p] {
			t.Errorf("%s's Layout table has no row for %s: add one", file, p)
		}
	}
}

// overviewItem is a bullet of the root doc.go's package list.
var overviewItem = regexp.MustCompile(`(?m)^//   - (pkg/[\w/]+):`)

// The root doc.go lists every package under pkg/, and only those.
func TestOverviewListsEveryPackage(t *testing.T) {
	listed := map[string]bool{}
	for _, m := range overviewItem.FindAllStringSubmatch(read(t, "doc.go"), -1) {
		listed[m[1]] = true
	}
	pkgs := goPackages(t, "pkg")
	for _, p := range pkgs {
		if !listed[p] {
			t.Errorf("doc.go lists no %s: add a bullet \"//   - %s: ...\" saying what it promises", p, p)
		}
	}
	for p := range listed {
		if !slices.Contains(pkgs, p) {
			t.Errorf("doc.go lists %s, which is not a package: remove it, or fix the path", p)
		}
	}
}

// duration is a time estimate in prose: "about ten minutes", "takes
// minutes", "over an hour", "in a few seconds".
var duration = regexp.MustCompile(`(?i)\b(?:about|around|roughly|nearly|almost|over|under|another|takes?|took|taking|in)\s+(?:(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty|sixty|a\s+few|few|several|\d+(?:[.,]\d+)?)\s+)?(?:minutes?|hours?)\b|\ba\s+few\s+seconds\b`)

// durationAllowed are time estimates that may stay in prose, by file, each
// with the reason. A build or test duration never belongs here: it is
// stated once, in the Makefile's help.
var durationAllowed = map[string]map[string]string{}

// Build and test times are stated once, in the Makefile's help ('make
// help'), and nowhere in the README or docs/, which point to it; estimates
// in two places disagreed (ten minutes in one, fifteen in another).
func TestTimeEstimatesOnlyInMakeHelp(t *testing.T) {
	files := []string{"README.md"}
	if exists("CONTRIBUTING.md") {
		files = append(files, "CONTRIBUTING.md")
	}
	mds, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mds {
		files = append(files, strings.TrimPrefix(m, root+"/"))
	}
	for _, file := range files {
		text := strings.Join(strings.Fields(read(t, file)), " ") // a phrase may span lines
		for _, m := range duration.FindAllString(text, -1) {
			if _, ok := durationAllowed[file][m]; !ok {
				t.Errorf("%s says %q: state build and test times once, in the Makefile's help ('## ...' on the target), and point to 'make help' here", file, m)
			}
		}
		for phrase := range durationAllowed[file] {
			if !strings.Contains(text, phrase) {
				t.Errorf("durationAllowed lists %q for %s, which no longer says it: remove the entry", phrase, file)
			}
		}
	}
	// The targets the prose sends readers to for times state them.
	help := map[string]string{}
	for _, l := range strings.Split(read(t, "Makefile"), "\n") {
		if target, text, ok := strings.Cut(l, "## "); ok && strings.Contains(target, ":") {
			help[strings.Fields(target)[0]] = text
		}
	}
	for _, target := range []string{"envtest:", "bench:"} {
		if !regexp.MustCompile(`minute|hour`).MatchString(help[target]) {
			t.Errorf("the Makefile's help of %s states no time (%q), which the docs send readers to 'make help' for", target, help[target])
		}
	}
}

// notYetItem is an item of the porting guide's "Not in opkit yet" list:
// its bold title and the rest of its text.
var notYetItem = regexp.MustCompile(`(?m)^- \*\*([^*]+)\*\*((?:.*\n)(?:  .*\n)*)`)

// The porting guide's "Not in opkit yet" list names only what opkit does
// not have: no item's title is an opkit package's name (it said webhooks
// were missing long after pkg/webhook landed), and no item names an opkit
// path or declaration that exists.
func TestNotInOpkitYetNamesWhatIsMissing(t *testing.T) {
	const file = "docs/porting-from-controller-runtime.md"
	apis := loadAPIs(t)
	var pkgNames []string
	for _, p := range goPackages(t, "pkg") {
		pkgNames = append(pkgNames, filepath.Base(p))
	}
	items := notYetItem.FindAllStringSubmatch(section(t, file, "## Not in opkit yet"), -1)
	if len(items) == 0 {
		t.Fatalf("%s's \"Not in opkit yet\" has no items in the form \"- **Title.** text\": the check below reads nothing", file)
	}
	for _, it := range items {
		title, text := it[1], it[1]+it[2]
		for _, w := range regexp.MustCompile(`[A-Za-z]+`).FindAllString(strings.ToLower(title), -1) {
			for _, p := range pkgNames {
				if w == p || strings.TrimSuffix(w, "s") == strings.TrimSuffix(p, "s") {
					t.Errorf("%s lists %q as not in opkit, but opkit has package %s", file, title, p)
				}
			}
		}
		for _, m := range regexp.MustCompile(`\bpkg/[\w/]+`).FindAllString(text, -1) {
			if exists(m) {
				t.Errorf("%s lists %q as not in opkit, but names %s, which exists", file, title, m)
			}
		}
		for _, m := range qualified.FindAllStringSubmatch(text, -1) {
			if resolve(apis, m[1], m[2], m[3]) == "" {
				t.Errorf("%s lists %q as not in opkit, but names %s, which exists", file, title, m[0])
			}
		}
	}
}

var (
	// mdLink is a Markdown link's target.
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// heading is a Markdown heading line.
	heading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	// fence is a fenced code block, which holds no links or headings.
	fence = regexp.MustCompile("(?ms)^```.*?^```")
)

// pendingDocs are files that links may name before they exist: each is
// being written on another branch. Remove an entry once its file is here.
var pendingDocs = []string{}

// anchors returns the GitHub anchors of a Markdown file's headings.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(text, ""), -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// Every relative link in the README, docs/ and config/'s READMEs leads to
// a file that exists and, with a #fragment, to a heading in it, so moving
// a section breaks the test, not the reader's click.
func TestLinksResolve(t *testing.T) {
	files := []string{"README.md"}
	for _, pattern := range []string{"docs/*.md", "config/*/README.md"} {
		ms, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			files = append(files, strings.TrimPrefix(m, root+"/"))
		}
	}
	for _, p := range pendingDocs {
		if exists(p) {
			t.Errorf("%s exists now: remove it from pendingDocs", p)
		}
	}
	for _, file := range files {
		text := fence.ReplaceAllString(read(t, file), "")
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			dest := file
			if path != "" {
				dest = filepath.ToSlash(filepath.Join(filepath.Dir(file), path))
			}
			if slices.Contains(pendingDocs, dest) {
				continue
			}
			if !exists(dest) {
				t.Errorf("%s links to %s, which does not exist", file, target)
				continue
			}
			if frag != "" && strings.HasSuffix(dest, ".md") && !anchors(read(t, dest))[frag] {
				t.Errorf("%s links to %s, but %s has no heading with the anchor #%s", file, target, dest, frag)
			}
		}
	}
}

// foreignPaths are pkg/ paths the docs name in other projects' trees.
var foreignPaths = map[string]string{
	"pkg/controllers/pod_controller.go":             "jobset's, in the porting guide",
	"pkg/apiserver/conversion/webhook_converter.go": "k8s.io/apiextensions-apiserver's, in webhooks.md",
	"pkg/apis/certmanager/v1":                       "cert-manager's, in webhooks.md and the tutorial",
	"pkg/apis/monitoring":                           "prometheus-operator's, in webhooks.md",
}

// Every pkg/ path that the README, docs/ or the root doc.go names exists:
// a package renamed or moved under internal/ breaks the test, not the
// reader's search.
func TestPkgPathsExist(t *testing.T) {
	files := []string{"README.md", "doc.go"}
	mds, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mds {
		files = append(files, strings.TrimPrefix(m, root+"/"))
	}
	for _, file := range files {
		for _, p := range regexp.MustCompile(`\bpkg/[\w./-]*\w`).FindAllString(read(t, file), -1) {
			if _, foreign := foreignPaths[p]; !foreign && !exists(p) {
				t.Errorf("%s names %s, which does not exist", file, p)
			}
		}
	}
}

// The README shows one controller, quoted from a compiled file: the
// Website example once it exists (issue 32), the porting guide's Mirror
// until then.
func TestREADMEQuotesTheWebsiteController(t *testing.T) {
	if !exists("examples/website") {
		t.Skip("examples/website does not exist yet; the README quotes the porting guide's Mirror")
	}
	if !strings.Contains(read(t, "README.md"), "<!-- from: examples/website/") {
		t.Error("examples/website exists, but the README's controller does not quote it: point its <!-- from: --> marker at the Website controller's file, and drop the \"README controller\" comment")
	}
}

// The README is read in five minutes: it stays short, and the details live
// in docs/.
func TestREADMEIsShort(t *testing.T) {
	const max = 250
	if n := strings.Count(read(t, "README.md"), "\n"); n > max {
		t.Errorf("README.md has %d lines, more than %d: move the detail to docs/ and link to it", n, max)
	}
}

// The versions the README states are the ones go.mod and the control
// plane's pins say: every mention, and at least one of each.
func TestREADMEVersionsMatchGoMod(t *testing.T) {
	readme := strings.Join(strings.Fields(read(t, "README.md")), " ")
	mod, err := modfile.Parse("go.mod", []byte(read(t, "go.mod")), nil)
	if err != nil {
		t.Fatal(err)
	}
	pins, err := modfile.Parse("go.mod", []byte(read(t, "hack/tools/envtest/"+testenv.DefaultVersion+"/go.mod")), nil)
	if err != nil {
		t.Fatal(err)
	}
	required := func(f *modfile.File, path string) string {
		for _, r := range f.Require {
			if r.Mod.Path == path {
				return r.Mod.Version
			}
		}
		t.Fatalf("no require of %s", path)
		return ""
	}
	for _, v := range []struct{ name, pattern, version string }{
		{"Go", `\bGo (\d+\.\d+(?:\.\d+)?)`, "v" + mod.Go.Version},
		{"client-go", `\bclient-go (v\d+\.\d+(?:\.\d+)?)`, required(mod, "k8s.io/client-go")},
		{"controller-runtime", `\bcontroller-runtime (v\d+\.\d+(?:\.\d+)?)`, required(mod, "sigs.k8s.io/controller-runtime")},
		{"Kubernetes", `\bKubernetes (\d+\.\d+(?:\.\d+)?)`, required(pins, "k8s.io/kubernetes")},
	} {
		mentions := regexp.MustCompile(v.pattern).FindAllStringSubmatch(readme, -1)
		if len(mentions) == 0 {
			t.Errorf("README.md names no version of %s (it should say %s)", v.name, v.version)
		}
		for _, m := range mentions {
			said := m[1]
			if !strings.HasPrefix(said, "v") {
				said = "v" + said
			}
			// A mention may be shorter than the version: "v0.37" of v0.37.2.
			if v.version != said && !strings.HasPrefix(v.version, said+".") {
				t.Errorf("README.md says %q, but the module uses %s %s", m[0], v.name, v.version)
			}
		}
	}
}

// The root doc.go says the layers never reach up: the queue imports
// nothing of Kubernetes but client-go's rate limiter interface, and of
// opkit only its own side for opkit's packages (internal/queueaccess),
// which imports neither; the cache imports none of its consumers, and
// sources and controllers never import the manager. That nothing under
// internal/ imports pkg/ is test/structure's TestInternalImportsNoPkg.
func TestLayersNeverReachUp(t *testing.T) {
	const mod = "github.com/opkit-dev/opkit/"
	forbidden := map[string]func(imp string) bool{
		"pkg/queue": func(imp string) bool {
			return strings.HasPrefix(imp, mod) && imp != mod+"internal/queueaccess" ||
				strings.HasPrefix(imp, "k8s.io/") && imp != "k8s.io/client-go/util/workqueue" && !strings.HasPrefix(imp, "k8s.io/utils/")
		},
		"internal/queueaccess": func(imp string) bool {
			return strings.HasPrefix(imp, mod) || strings.HasPrefix(imp, "k8s.io/")
		},
		"pkg/cache": func(imp string) bool {
			return slices.Contains([]string{"pkg/source", "pkg/queue", "pkg/controller", "pkg/reconcile", "pkg/manager", "pkg/client", "internal/consistency"}, strings.TrimPrefix(imp, mod))
		},
		"pkg/source":     func(imp string) bool { return imp == mod+"pkg/manager" },
		"pkg/controller": func(imp string) bool { return imp == mod+"pkg/manager" },
	}
	for dir, bad := range forbidden {
		for imp := range imports(t, dir) {
			if bad(imp) {
				t.Errorf("%s imports %s, which doc.go's \"Layered\" says it never does", dir, imp)
			}
		}
	}
}

// imports returns the imports of the non-test Go files in dir.
func imports(t *testing.T, dir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	entries, err := os.ReadDir(filepath.Join(root, dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, dir, e.Name()), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			out[p] = true
		}
	}
	return out
}
