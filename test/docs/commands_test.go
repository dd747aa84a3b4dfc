package docs_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// opkitFlags returns the flags of each opkit subcommand ("create api"),
// read from cmd/opkit's flag definitions: every flag.NewFlagSet("opkit
// <sub>", ...) and the flags defined on it in the same function.
func opkitFlags(t *testing.T) map[string][]string {
	t.Helper()
	dir := filepath.Join(root, "cmd", "opkit")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			sub, fs, flags := "", "", []string{}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if as, ok := n.(*ast.AssignStmt); ok && len(as.Lhs) == 1 && len(as.Rhs) == 1 {
					if call, ok := as.Rhs[0].(*ast.CallExpr); ok && isSelector(call.Fun, "flag", "NewFlagSet") && len(call.Args) > 0 {
						if s, ok := stringLit(call.Args[0]); ok {
							sub = strings.TrimPrefix(s, "opkit ")
						}
						if id, ok := as.Lhs[0].(*ast.Ident); ok {
							fs = id.Name
						}
					}
					return true
				}
				call, ok := n.(*ast.CallExpr)
				if !ok || fs == "" {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || !isSelector(sel, fs, sel.Sel.Name) {
					return true
				}
				// fs.String("name", ...); fs.StringVar(&v, "name", ...), fs.Var(v, "name", ...)
				i := 0
				if strings.HasSuffix(sel.Sel.Name, "Var") {
					i = 1
				}
				if i < len(call.Args) {
					if s, ok := stringLit(call.Args[i]); ok {
						flags = append(flags, s)
					}
				}
				return true
			})
			if sub != "" {
				out[sub] = append(out[sub], flags...)
			}
		}
	}
	if len(out["create api"]) == 0 {
		t.Fatal("found no flags of opkit create api in cmd/opkit: the pattern or the code changed")
	}
	return out
}

// isSelector reports whether e is x.sel.
func isSelector(e ast.Expr, x, sel string) bool {
	s, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := s.X.(*ast.Ident)
	return ok && id.Name == x && s.Sel.Name == sel
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// scaffoldPages are the docs about a generated project: their make
// targets are the scaffold's (opkit.mk and the Makefile around it), and
// the paths their commands name are in that project, not here.
var scaffoldPages = []string{"docs/tutorial.md", "docs/write-your-own-operator.md", "docs/kubebuilder-comparison.md"}

// scaffoldSections are sections of other pages that are about a generated
// project, by page.
var scaffoldSections = map[string][]string{
	"README.md":        {"## Quickstart: your own operator"},
	"docs/webhooks.md": {"## Webhooks on another module's kind"},
}

// aboutScaffold reports whether line of page is about a generated project.
func aboutScaffold(t *testing.T, page string, line int) bool {
	t.Helper()
	if slices.Contains(scaffoldPages, page) {
		return true
	}
	text := read(t, page)
	for _, h := range scaffoldSections[page] {
		at := strings.Index(text, "\n"+h+"\n")
		if at < 0 {
			t.Fatalf("%s has no heading %q, which scaffoldSections names", page, h)
		}
		start := lineOf(text, at+1)
		end := start + strings.Count(section(t, page, h), "\n")
		if start <= line && line <= end {
			return true
		}
	}
	return false
}

// shellFields splits a command line into words as a shell would, with
// quotes removed; "..." (an elision in the docs) is no word.
func shellFields(s string) []string {
	var out []string
	var cur strings.Builder
	var quote rune
	inWord := false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord && cur.String() != "..." {
				out = append(out, cur.String())
			}
			cur.Reset()
			inWord = false
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord && cur.String() != "..." {
		out = append(out, cur.String())
	}
	return out
}

// unchecked are the programs the docs run whose command lines the test
// does not check, each with the reason.
var unchecked = map[string]string{
	"kubectl":         "acts on a cluster; on opkit's pages, the paths it applies (-k, -f) are checked",
	"kind":            "a cluster of the reader's",
	"docker":          "a daemon of the reader's",
	"ctr":             "a containerd node of the reader's",
	"curl":            "reads a running operator's endpoint",
	"grep":            "filters another command's output",
	"base64":          "filters another command's output",
	"openssl":         "filters another command's output",
	"git":             "git's own commands",
	"cd":              "the reader's directories",
	"mkdir":           "the reader's directories",
	"export":          "sets the reader's environment",
	"sample-operator": "the sample operator's binary; its flags are documented by -h and tested in cmd/sample-operator",
}

var (
	// shellBlock is a fenced block of shell commands.
	shellBlock = regexp.MustCompile("(?ms)^ *```(?:sh|bash|shell|console)\\n(.*?)^ *```")
	// inlineCommand is a command in a code span of the prose.
	inlineCommand = regexp.MustCompile("`((?:make|opkit|go tool opkit|go run \\./cmd/opkit|go run github\\.com/opkit-dev/opkit/cmd/opkit) [^`]*)`")
	// subshell is $(...), a command inside another.
	subshell = regexp.MustCompile(`\$\(([^()]*)\)`)
	// assignment is VAR=value before a command or among make's arguments.
	assignment = regexp.MustCompile(`^([A-Z_][A-Z0-9_]*)=`)
	// makeTarget is a rule's target list in a Makefile.
	makeTarget = regexp.MustCompile(`(?m)^([a-zA-Z0-9][\w.-]*(?: [a-zA-Z0-9][\w.-]*)*):`)
)

// docCommand is a command line of the docs, with where it is.
type docCommand struct {
	file string
	line int
	text string
}

// docCommands returns the commands of the README's and docs/' shell
// blocks, one per line (continuations joined, comments dropped), and of
// code spans that begin with make or opkit.
func docCommands(t *testing.T) []docCommand {
	t.Helper()
	files := []string{"README.md"}
	mds, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mds {
		files = append(files, strings.TrimPrefix(m, root+"/"))
	}
	var out []docCommand
	for _, file := range files {
		text := read(t, file)
		for _, m := range shellBlock.FindAllStringSubmatchIndex(text, -1) {
			line := lineOf(text, m[2])
			var cur string
			for i, l := range strings.Split(text[m[2]:m[3]], "\n") {
				if c := strings.Index(l, " #"); c >= 0 {
					l = l[:c]
				}
				if strings.HasPrefix(strings.TrimSpace(l), "#") {
					l = ""
				}
				l = strings.TrimSpace(l)
				if strings.HasSuffix(l, `\`) {
					cur += strings.TrimSuffix(l, `\`) + " "
					continue
				}
				if cur += l; strings.TrimSpace(cur) != "" {
					out = append(out, docCommand{file, line + i, strings.TrimSpace(cur)})
				}
				cur = ""
			}
		}
		prose := fence.ReplaceAllString(text, "")
		for _, m := range inlineCommand.FindAllStringSubmatchIndex(prose, -1) {
			// prose drops the blocks, so find the span's line in the file.
			span := prose[m[0]:m[1]]
			line := 0
			if at := strings.Index(text, span); at >= 0 {
				line = lineOf(text, at)
			}
			out = append(out, docCommand{file, line, strings.Join(strings.Fields(prose[m[2]:m[3]]), " ")})
		}
	}
	return out
}

// makefile returns the targets and the text of opkit's Makefile, or of
// the scaffold's.
func makefile(t *testing.T, scaffold bool) (name string, targets []string, text string) {
	t.Helper()
	name = "Makefile"
	text = read(t, "Makefile")
	if scaffold {
		name = "the scaffold's Makefile (internal/scaffold/templates/init/Makefile.tmpl and opkit.mk.tmpl)"
		text = read(t, "internal/scaffold/templates/init/Makefile.tmpl") + read(t, "internal/scaffold/templates/init/opkit.mk.tmpl")
	}
	for _, m := range makeTarget.FindAllStringSubmatch(text, -1) {
		targets = append(targets, strings.Fields(m[1])...)
	}
	return name, targets, text
}

// Every command of the README's and docs/' shell blocks, and every make
// or opkit command in their prose, runs something that exists: a target
// of the Makefile the page is about (opkit's, or the scaffold's) and the
// variables it sets, an opkit subcommand and its flags (as cmd/opkit
// defines them), and the paths of this repository it names.
func TestDocsCommandsExist(t *testing.T) {
	flags := opkitFlags(t)
	var subs []string
	for s := range flags {
		subs = append(subs, s)
	}
	seen := map[string]bool{}
	for _, c := range docCommands(t) {
		where := fmt.Sprintf("%s:%d", c.file, c.line)
		scaffold := aboutScaffold(t, c.file, c.line)
		text := c.text
		for _, m := range subshell.FindAllStringSubmatch(text, -1) {
			checkCommand(t, where, scaffold, m[1], flags, subs)
		}
		text = subshell.ReplaceAllString(text, "X")
		for _, part := range regexp.MustCompile(`&&|\|\||;|\|`).Split(text, -1) {
			part = strings.Trim(strings.TrimSpace(part), "()")
			if part != "" {
				checkCommand(t, where, scaffold, part, flags, subs)
				seen[strings.Fields(part)[0]] = true
			}
		}
	}
	for _, want := range []string{"make", "opkit", "go"} {
		if !seen[want] {
			t.Errorf("found no %s command in the docs: the patterns above read nothing", want)
		}
	}
}

// checkCommand checks one command, with its environment assignments.
func checkCommand(t *testing.T, where string, scaffold bool, cmd string, flags map[string][]string, subs []string) {
	t.Helper()
	fields := shellFields(cmd)
	var env []string
	for len(fields) > 0 && assignment.MatchString(fields[0]) {
		env = append(env, assignment.FindStringSubmatch(fields[0])[1])
		fields = fields[1:]
	}
	if len(fields) == 0 {
		return
	}
	prog, args := fields[0], fields[1:]
	switch {
	case prog == "make":
		name, targets, text := makefile(t, scaffold)
		for _, a := range args {
			if m := assignment.FindStringSubmatch(a); m != nil {
				env = append(env, m[1])
			} else if !strings.HasPrefix(a, "-") && !slices.Contains(targets, a) {
				t.Errorf("%s runs %q, but %s has no target %s: fix the command, or the page's Makefile", where, cmd, name, a)
			}
		}
		for _, v := range env {
			if !regexp.MustCompile(`\b` + v + `\b`).MatchString(text) {
				t.Errorf("%s runs %q, but %s never reads %s: fix the variable's name", where, cmd, name, v)
			}
		}
	case prog == "opkit":
		checkOpkit(t, where, cmd, args, flags, subs)
	case prog == "go" && len(args) >= 2 && args[0] == "tool" && args[1] == "opkit":
		checkOpkit(t, where, cmd, args[2:], flags, subs)
	case prog == "go" && len(args) >= 2 && args[0] == "run" && (args[1] == "./cmd/opkit" || args[1] == "github.com/opkit-dev/opkit/cmd/opkit"):
		checkOpkit(t, where, cmd, args[2:], flags, subs)
	case prog == "go":
		dir := ""
		if len(args) >= 2 && args[0] == "-C" {
			dir, args = args[1], args[2:]
		}
		for _, a := range args {
			if p, ok := strings.CutPrefix(a, "./"); ok && !scaffold {
				p = filepath.Join(dir, strings.TrimSuffix(strings.TrimSuffix(p, "..."), "/"))
				if !exists(p) {
					t.Errorf("%s runs %q, but %s does not exist", where, cmd, p)
				}
			}
		}
	case strings.HasPrefix(prog, "hack/"):
		if !exists(prog) {
			t.Errorf("%s runs %q, but %s does not exist", where, cmd, prog)
		}
	case prog == "kubectl":
		for i, a := range args {
			if (a == "-k" || a == "-f") && i+1 < len(args) && !scaffold && !exists(args[i+1]) {
				t.Errorf("%s runs %q, but %s does not exist in this repository", where, cmd, args[i+1])
			}
		}
	default:
		if _, ok := unchecked[prog]; !ok {
			t.Errorf("%s runs %q: the test knows no %s; check it in checkCommand, or add it to unchecked with the reason", where, cmd, prog)
		}
	}
}

// checkOpkit checks an opkit command line's subcommand and flags.
func checkOpkit(t *testing.T, where, cmd string, args []string, flags map[string][]string, subs []string) {
	t.Helper()
	sub := ""
	for _, s := range subs {
		words := strings.Fields(s)
		if len(args) >= len(words) && slices.Equal(args[:len(words)], words) && len(s) > len(sub) {
			sub = s
		}
	}
	if sub == "" {
		t.Errorf("%s runs %q, but opkit has no such subcommand (cmd/opkit defines %q)", where, cmd, subs)
		return
	}
	for _, a := range args[len(strings.Fields(sub)):] {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name != "h" && name != "help" && !slices.Contains(flags[sub], name) {
			t.Errorf("%s runs %q, but opkit %s has no flag --%s (cmd/opkit defines %q)", where, cmd, sub, name, flags[sub])
		}
	}
}

// The reference of the opkit command, write-your-own-operator.md, names
// every subcommand and every flag that cmd/opkit defines, so a flag added
// without its documentation fails here.
func TestReferenceNamesEveryOpkitFlag(t *testing.T) {
	const page = "docs/write-your-own-operator.md"
	text := read(t, page)
	for sub, names := range opkitFlags(t) {
		if !strings.Contains(text, "`opkit "+sub+"`") {
			t.Errorf("%s does not name `opkit %s`: add it to the commands table of section 0", page, sub)
		}
		for _, f := range names {
			if !regexp.MustCompile("`--" + regexp.QuoteMeta(f) + "[`= ]").MatchString(text) {
				t.Errorf("%s does not name opkit %s's flag `--%s`: say what it does, in the commands table of section 0 and where the command is explained", page, sub, f)
			}
		}
	}
}
