package scaffold

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// oldTemplates are the templates of an older opkit: today's, with the
// files under testdata/old-templates laid over them.
func oldTemplates(t *testing.T) fs.FS {
	t.Helper()
	out := fstest.MapFS{}
	for _, src := range []fs.FS{templates, os.DirFS("testdata/old-templates")} {
		err := fs.WalkDir(src, "templates", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := fs.ReadFile(src, p)
			out[p] = &fstest.MapFile{Data: b}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

const oldVersion = "v0.1.0"

// oldProject scaffolds, with the templates in tfs, a project with an API
// and records their base as opkit oldVersion's, as an older opkit would
// have; no command runs.
func oldProject(t *testing.T, tfs fs.FS) string {
	t.Helper()
	dir := t.TempDir()
	opts := InitOptions{Module: "example.com/acme-operator", OpkitReplace: opkitRoot(t)}
	opts.defaults()
	out, err := initFilesFrom(tfs, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := out.write(dir); err != nil {
		t.Fatal(err)
	}
	p, err := LoadProject(dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := frigateV1.resolve(p)
	if err != nil {
		t.Fatal(err)
	}
	out, err = (&changes{dir: dir, tmpl: tfs, out: files{}}).api(p, frigateV1, d)
	if err == nil {
		err = recordBase(out, tfs, p, opts.OpkitReplace)
	}
	if err != nil {
		t.Fatal(err)
	}
	out[versionFile] = []byte(oldVersion + "\n")
	if err := out.write(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Edits a user makes to the old project.
const (
	userLabel  = "    team: platform\n"
	userTarget = "\n.PHONY: deploy-staging\ndeploy-staging:\n\t@echo mine\n"
	userFile   = "internal/controller/helpers.go"
	userCode   = "package controller\n\n// mine\n"
)

func editOldProject(t *testing.T, dir string) {
	t.Helper()
	replaceIn(t, filepath.Join(dir, "config/rbac/service_account.yaml"), "    app.kubernetes.io/name: acme-operator\n", "    app.kubernetes.io/name: acme-operator\n"+userLabel)
	appendTo(t, filepath.Join(dir, "Makefile"), userTarget)
	appendTo(t, filepath.Join(dir, "internal/controller/frigate_controller.go"), "\n// mine\n")
	write(t, filepath.Join(dir, userFile), userCode)
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	write(t, path, string(b)+s)
}

// today renders dir's project with today's templates.
func today(t *testing.T, dir string) files {
	t.Helper()
	p, err := LoadProject(dir)
	if err != nil {
		t.Fatal(err)
	}
	gen, err := generate(templates, p, opkitReplace(dir))
	if err != nil {
		t.Fatal(err)
	}
	return gen
}

func TestUpgrade(t *testing.T) {
	dir := oldProject(t, oldTemplates(t))
	editOldProject(t, dir)
	before := tree(t, dir)

	var dry strings.Builder
	if err := Upgrade(t.Context(), dir, UpgradeOptions{DryRun: true, Out: &dry}); err != nil {
		t.Fatalf("dry run: %v", err)
	}
	checkUnchanged(t, dir, before)

	var out strings.Builder
	err := Upgrade(t.Context(), dir, UpgradeOptions{Out: &out})
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "config/rbac/service_account.yaml") {
		t.Errorf("Upgrade = %v, want an error wrapping ErrConflict naming config/rbac/service_account.yaml", err)
	}
	for _, want := range []string{
		"from the templates of opkit " + oldVersion,
		"updated   opkit.mk",
		"merged    Makefile",
		"CONFLICT  config/rbac/service_account.yaml",
		"make manifests and make test",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("Upgrade's report lacks %q:\n%s", want, out.String())
		}
		if want != "make manifests and make test" && !strings.Contains(dry.String(), want) {
			t.Errorf("the dry run's report lacks %q:\n%s", want, dry.String())
		}
	}
	if got := len(strings.Split(strings.TrimSpace(out.String()), "\n")); got != 6 {
		t.Errorf("Upgrade reported %d lines, want 6 (a header, 3 files, 2 of next steps):\n%s", got, out.String())
	}
	if !strings.Contains(dry.String(), "Nothing was written (--dry-run).") {
		t.Errorf("the dry run's report does not say it wrote nothing:\n%s", dry.String())
	}

	now := today(t, dir)
	got := func(path string) string { return readFile(t, dir, path) }
	if diff := cmp.Diff(string(now["opkit.mk"]), got("opkit.mk")); diff != "" {
		t.Errorf("opkit.mk, opkit's and untouched, is not today's (-want +got):\n%s", diff)
	}
	if want := string(now["Makefile"]) + userTarget; got("Makefile") != want {
		t.Errorf("Makefile does not merge today's template with the user's target:\n%s", got("Makefile"))
	}
	sa := got("config/rbac/service_account.yaml")
	for _, want := range []string{"<<<<<<< yours\n", userLabel, "||||||| opkit " + oldVersion, "=======\n", "app.kubernetes.io/managed-by: kustomize\n", ">>>>>>> opkit "} {
		if !strings.Contains(sa, want) {
			t.Errorf("the conflicting service_account.yaml lacks %q:\n%s", want, sa)
		}
	}
	for path, want := range map[string]string{
		userFile: before[userFile],
		"internal/controller/frigate_controller.go": before["internal/controller/frigate_controller.go"],
		"go.mod": before["go.mod"],
	} {
		if got := "-rw-r--r-- " + got(path); got != want {
			t.Errorf("%s changed:\n%s", path, cmp.Diff(want, got))
		}
	}
	for path, b := range now {
		if got := got(baseDir + "/" + path); got != string(b) {
			t.Errorf("%s's record is not today's template", path)
		}
	}

	// Once upgraded, a project has nothing to upgrade.
	out.Reset()
	if err := Upgrade(t.Context(), dir, UpgradeOptions{Out: &out}); err != nil || !strings.Contains(out.String(), "Nothing to change") {
		t.Errorf("a second Upgrade = %v:\n%s", err, out.String())
	}
}

func TestUpgradeWithoutGit(t *testing.T) {
	dir := oldProject(t, oldTemplates(t))
	editOldProject(t, dir)
	t.Setenv("PATH", "")
	before := readFile(t, dir, "config/rbac/service_account.yaml")
	var out strings.Builder
	err := Upgrade(t.Context(), dir, UpgradeOptions{Out: &out})
	if !errors.Is(err, ErrConflict) {
		t.Errorf("Upgrade = %v, want an error wrapping ErrConflict", err)
	}
	if got := readFile(t, dir, "config/rbac/service_account.yaml"); got != before {
		t.Errorf("service_account.yaml changed without a merge:\n%s", got)
	}
	now := today(t, dir)
	for _, f := range []string{"config/rbac/service_account.yaml", "Makefile"} {
		if got := readFile(t, dir, f+NewSuffix); got != string(now[f]) {
			t.Errorf("%s%s is not today's template:\n%s", f, NewSuffix, got)
		}
		if !strings.Contains(out.String(), "REVIEW    "+f+" (opkit's version go to "+f+NewSuffix+"): no git") {
			t.Errorf("the report does not send the user to %s%s:\n%s", f, NewSuffix, out.String())
		}
	}
}

// A project an opkit made before the record: opkit's files are rewritten,
// the user's edited ones get opkit's version beside them.
func TestUpgradeWithoutRecord(t *testing.T) {
	dir := oldProject(t, oldTemplates(t))
	editOldProject(t, dir)
	if err := os.RemoveAll(filepath.Join(dir, ".opkit")); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	err := Upgrade(t.Context(), dir, UpgradeOptions{Out: &out})
	if !errors.Is(err, ErrConflict) {
		t.Errorf("Upgrade = %v, want an error wrapping ErrConflict", err)
	}
	now := today(t, dir)
	for _, f := range []string{"opkit.mk", "config/rbac/service_account.yaml"} {
		if got := readFile(t, dir, f); got != string(now[f]) {
			t.Errorf("%s, opkit's, is not today's:\n%s", f, got)
		}
	}
	for _, f := range []string{"Makefile", "internal/controller/frigate_controller.go"} {
		if _, err := os.Stat(filepath.Join(dir, f+NewSuffix)); err != nil {
			t.Errorf("no %s%s beside the user's edited file: %v\n%s", f, NewSuffix, err, out.String())
		}
	}
}

// The replay renders the files as the commands made them.
func TestGenerateReplaysTheCommands(t *testing.T) {
	dir := newProject(t)
	addAPI(t, dir, frigateV1)
	addAPI(t, dir, APIOptions{Group: "apps", Version: "v1", Kind: "Deployment", Namespaced: true, Controller: true})
	addWebhook(t, dir, WebhookOptions{Group: "ship", Version: "v1", Kind: "Frigate", Defaulting: true, Validation: true, RequesterCheck: true})
	// Webhooks on built-in kinds: one with a controller, one alone.
	addWebhook(t, dir, WebhookOptions{Group: "apps", Version: "v1", Kind: "Deployment", Defaulting: true, Validation: true})
	addWebhook(t, dir, WebhookOptions{Group: "core", Version: "v1", Kind: "Pod", Validation: true})
	onDisk, err := readMarked(dir)
	if err != nil {
		t.Fatal(err)
	}
	gen := today(t, dir)
	for path := range onDisk {
		if diff := cmp.Diff(string(onDisk[path]), string(gen[path])); diff != "" {
			t.Errorf("%s rendered again differs from the commands' (-commands +replay):\n%s", path, diff)
		}
	}
	for path := range gen {
		if _, ok := onDisk[path]; !ok {
			t.Errorf("the replay renders %s, which the commands did not", path)
		}
	}
}

func TestCreateAPIRefusesAnotherOpkitsProject(t *testing.T) {
	dir := oldProject(t, templates)
	err := CreateAPI(t.Context(), dir, APIOptions{Group: "ship", Version: "v2", Kind: "Frigate", Resource: true})
	if !errors.Is(err, ErrUpgradeFirst) || !strings.Contains(err.Error(), "opkit upgrade") {
		t.Errorf("CreateAPI in a project of opkit %s = %v, want an error wrapping ErrUpgradeFirst", oldVersion, err)
	}
}

// A build from a checkout has no template version, however Go reports it:
// opkit init run in the checkout says (devel), go tool opkit in the project
// it made says the pseudo-version its go.mod requires, replaced by the
// checkout. Both must agree, or create api would refuse every such project.
func TestModuleVersionOfACheckout(t *testing.T) {
	for _, m := range []*debug.Module{
		{Path: opkitModule, Version: "(devel)"},
		{Path: opkitModule, Version: develPseudoVersion, Replace: &debug.Module{Path: "/src/opkit"}},
		{Path: opkitModule, Version: "v0.3.0", Replace: &debug.Module{Path: "../opkit"}},
		{Path: "example.com/other", Version: "v1.0.0"},
	} {
		if got := moduleVersion(m); got != DevelVersion {
			t.Errorf("moduleVersion(%+v) = %q, want %q", *m, got, DevelVersion)
		}
	}
	if got := moduleVersion(&debug.Module{Path: opkitModule, Version: "v0.3.0"}); got != "v0.3.0" {
		t.Errorf("a released opkit's version = %q, want v0.3.0", got)
	}
}
