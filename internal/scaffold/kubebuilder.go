package scaffold

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// FromKubebuilderOptions are what opkit init --from-kubebuilder is given.
type FromKubebuilderOptions struct {
	// Source is the kubebuilder project to port: a directory with a
	// PROJECT file of version 3. It is only read.
	Source string
	// OpkitVersion, OpkitVendor and OpkitReplace say where the ported
	// project gets opkit from, as InitOptions' do.
	OpkitVersion, OpkitVendor, OpkitReplace string
	// Progress receives a line before each slow step. Defaults to none.
	Progress io.Writer
}

// FromKubebuilderResult is what a port made.
type FromKubebuilderResult struct {
	// Mapped and Needs count the report's items (OPKIT_PORT.md).
	Mapped, Needs int
	// Generated are the files written anew or in place of the source's,
	// relative to the project.
	Generated []string
}

// FromKubebuilder ports the kubebuilder project in opts.Source into dir
// (which must be empty but for .git, or not exist): a copy of it whose
// cmd/main.go runs its controllers and webhooks, unchanged, on opkit's
// manager and cached client, whose Makefile runs its tests on opkit's
// control plane (opkit envtest, offline), and whose OPKIT_PORT.md
// accounts for every item of its PROJECT, main, setups and envtest steps,
// with file and line: mapped, or needing a hand. Nothing is dropped
// without a line there. Then go mod tidy and go build ./... run in dir; if
// tidy fails, dir is left as it was.
func FromKubebuilder(ctx context.Context, dir string, opts FromKubebuilderOptions) (FromKubebuilderResult, error) {
	var res FromKubebuilderResult
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	for _, p := range []*string{&opts.OpkitReplace, &opts.OpkitVendor, &opts.Source} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return res, fmt.Errorf("init: %s: %w", *p, err)
		}
		*p = abs
	}
	projectData, err := os.ReadFile(filepath.Join(opts.Source, ProjectFile))
	if err != nil {
		return res, fmt.Errorf("init --from-kubebuilder: %s is not a kubebuilder project: %w", opts.Source, err)
	}
	init := InitOptions{Module: "example.com/x", OpkitVersion: opts.OpkitVersion, OpkitVendor: opts.OpkitVendor, OpkitReplace: opts.OpkitReplace}
	init.defaults()
	if err := init.validate(dir); err != nil {
		return res, err
	}
	rep := &portReport{}
	p, err := parseKubebuilderProject(projectData, rep)
	if err != nil {
		return res, fmt.Errorf("init --from-kubebuilder: %w", err)
	}
	goModData, err := os.ReadFile(filepath.Join(opts.Source, "go.mod"))
	if err != nil {
		return res, fmt.Errorf("init --from-kubebuilder: %w", err)
	}
	mod := modfile.ModulePath(goModData)
	if mod != p.Repo {
		rep.needs(ProjectFile, 0, "repo "+p.Repo, "go.mod declares "+mod+": the port follows go.mod")
	}
	gofiles, err := loadGoFiles(opts.Source)
	if err != nil {
		return res, fmt.Errorf("init --from-kubebuilder: %w", err)
	}
	reportImports(gofiles, rep)
	out := files{}
	setups, err := portSetups(gofiles, p, mod, out, rep)
	if err != nil {
		return res, fmt.Errorf("init --from-kubebuilder: %w", err)
	}
	unservedWebhooks(p, setups, rep)
	var mainFile *kbFile
	for _, f := range gofiles {
		if f.Rel == "cmd/main.go" || (mainFile == nil && f.Rel == "main.go") {
			mainFile = f
		}
	}
	if mainFile == nil {
		return res, fmt.Errorf("init --from-kubebuilder: %s has neither cmd/main.go nor main.go: port the manager by hand (docs/porting-from-controller-runtime.md)", opts.Source)
	}
	if out[mainFile.Rel], err = portMain(mainFile, mod, setups, rep); err != nil {
		return res, fmt.Errorf("init --from-kubebuilder: %w", err)
	}
	suites, err := portSuites(opts.Source, mod, gofiles, setups, out, rep)
	if err != nil {
		return res, fmt.Errorf("init --from-kubebuilder: %w", err)
	}
	if mk, err := os.ReadFile(filepath.Join(opts.Source, "Makefile")); err == nil {
		out["Makefile"] = portMakefile(mk, rep)
	} else {
		rep.needs("Makefile", 0, "Makefile", "none found: run the tests with KUBEBUILDER_ASSETS=$(go tool opkit envtest)")
	}
	replace := opts.OpkitReplace
	if opts.OpkitVendor != "" {
		fmt.Fprintf(opts.Progress, "Copying opkit from %s into %s...\n", opts.OpkitVendor, vendorDir)
		copied, err := vendorFiles(ctx, opts.OpkitVendor)
		if err != nil {
			return res, fmt.Errorf("init: %w", err)
		}
		maps.Copy(out, copied)
		replace = vendorReplace
	}
	if out["go.mod"], err = portGoMod(goModData, opts.OpkitVersion, replace); err != nil {
		return res, fmt.Errorf("init --from-kubebuilder: %w", err)
	}
	rep.mapped("go.mod", 0, "go.mod", "requires opkit, lists its command as a tool (go tool opkit envtest); go mod tidy moves controller-runtime and k8s.io to the versions opkit is built with")
	for name := range out {
		res.Generated = append(res.Generated, name)
	}
	err = transact(dir, func() error {
		fmt.Fprintf(opts.Progress, "Copying %s into %s...\n", opts.Source, dir)
		if err := copyTree(opts.Source, dir); err != nil {
			return err
		}
		if err := out.write(dir); err != nil {
			return err
		}
		fmt.Fprintf(opts.Progress, "Running go mod tidy in %s...\n", dir)
		tidyErr := runIn(ctx, dir, "go", "mod", "tidy")
		if tidyErr != nil {
			// A package the project imports may be gone from the versions
			// opkit moves it to (an alpha API Kubernetes dropped): tidy
			// what can be, and say which, unless moving the staging
			// modules below brings it back.
			if err := runIn(ctx, dir, "go", "mod", "tidy", "-e"); err != nil {
				return fmt.Errorf("init --from-kubebuilder: %w; the directory is left as it was: check that the Go module proxy is reachable (GOPROXY, GOFLAGS), and that the opkit version %s exists", tidyErr, opts.OpkitVersion)
			}
		}
		tidied, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err != nil {
			return err
		}
		if moves := lockstep(goModData, tidied); len(moves) > 0 {
			// Kubernetes' staging modules are released together and
			// built against each other: left behind, an older
			// k8s.io/component-helpers does not build against the newer
			// k8s.io/api.
			fmt.Fprintf(opts.Progress, "Moving %s with k8s.io/api...\n", strings.Join(moves, " "))
			if err := runIn(ctx, dir, "go", append([]string{"get"}, moves...)...); err != nil {
				return fmt.Errorf("init --from-kubebuilder: move the project's k8s.io modules with k8s.io/api: %w; the directory is left as it was", err)
			}
			if tidyErr = runIn(ctx, dir, "go", "mod", "tidy"); tidyErr != nil {
				if err := runIn(ctx, dir, "go", "mod", "tidy", "-e"); err != nil {
					return fmt.Errorf("init --from-kubebuilder: %w; the directory is left as it was", err)
				}
			}
			if tidied, err = os.ReadFile(filepath.Join(dir, "go.mod")); err != nil {
				return err
			}
		}
		if tidyErr != nil {
			rep.needs("go.mod", 0, "go mod tidy", "packages the project imports are missing at the versions opkit is built with, and what imports them does not build until they are replaced: "+missingPackages(tidyErr))
		}
		versionMoves(goModData, tidied, rep)
		if len(suites) > 0 {
			fmt.Fprintf(opts.Progress, "Compiling the test suites ported onto opkit's manager...\n")
			if err := checkSuites(ctx, dir, suites, rep); err != nil {
				return err
			}
		}
		res.Mapped, res.Needs = len(rep.Mapped), len(rep.Needs)
		return os.WriteFile(filepath.Join(dir, reportFile), rep.markdown(opts.Source), 0o644)
	})
	if err != nil {
		return res, err
	}
	fmt.Fprintf(opts.Progress, "Running go build ./... in %s...\n", dir)
	if err := runIn(ctx, dir, "go", "build", "./..."); err != nil {
		return res, fmt.Errorf("init --from-kubebuilder: the port is in %s, but it does not build (controller-runtime and Kubernetes moved to opkit's versions; %s lists what was not mapped): %w", dir, reportFile, err)
	}
	return res, nil
}

// unservedWebhooks reports each kind whose PROJECT entry has a defaulter
// or validator but whose webhook setup was not ported: one neither named
// kubebuilder's way (Setup<Kind>WebhookWithManager) nor one builder chain
// of the kind's webhook (jobset's setupWebhookForJobSet), or not found,
// stays on controller-runtime's manager, which the port does not run.
func unservedWebhooks(p *kbProject, setups portedSetups, rep *portReport) {
	for _, r := range p.Resources {
		if r.Webhooks == nil || (!r.Webhooks.Defaulting && !r.Webhooks.Validation) {
			continue
		}
		fn := "Setup" + r.Kind + "WebhookWithManager"
		_, served := setups[kindKey(r.Path, r.Kind)]
		for k := range setups {
			// A twin's key is an import path and a name; others have a
			// prefix (whyKey, servesKey).
			served = served || (strings.HasSuffix(string(k), "."+fn) && !strings.Contains(string(k), ":"))
		}
		if !served {
			rep.needs("PROJECT", r.Webhooks.Line, r.Kind+" webhooks", "no "+fn+", nor another webhook setup of "+r.Kind+", was ported (none found, or see its entry), so opkit's webhook server does not serve this defaulter or validator: "+
				"register it on opkit's manager by hand with crport.Webhooks, as the generated Setup...WebhookWithOpkit functions do")
		}
	}
}

// certControllerRotator is open-policy-agent/cert-controller's rotator,
// which many kubebuilder projects use for their webhook certificates.
const certControllerRotator = "github.com/open-policy-agent/cert-controller/pkg/rotator"

// reportImports reports each import of a package that takes
// controller-runtime's manager and has an opkit counterpart.
func reportImports(gofiles []*kbFile, rep *portReport) {
	for _, f := range gofiles {
		for _, imp := range f.AST.Imports {
			if strings.Trim(imp.Path.Value, `"`) == certControllerRotator {
				rep.mapped(f.Rel, f.line(imp), "cert-controller's rotator", "kept: where the project gave it controller-runtime's manager, the port gives it the one opkit's hosts (crport.ControllerRuntimeManager); "+
					"opkit's own pkg/webhook/certs does the same on opkit's manager (the porting guide's \"Webhook certificates: from cert-controller's rotator\" maps its fields)")
			}
		}
	}
}

// movedModules are the modules whose versions opkit's own requirements
// move a project to, and whose breaking changes it must take.
var movedModules = []string{"sigs.k8s.io/controller-runtime", "k8s.io/api", "k8s.io/apimachinery", "k8s.io/client-go"}

// requirements is what a go.mod requires: module path -> version.
func requirements(data []byte) map[string]string {
	m := map[string]string{}
	if f, err := modfile.Parse("go.mod", data, nil); err == nil {
		for _, r := range f.Require {
			m[r.Mod.Path] = r.Mod.Version
		}
	}
	return m
}

// lockstep is the go get arguments that move each Kubernetes staging
// module of the project (before) that go mod tidy left behind k8s.io/api
// (after) to k8s.io/api's version: the staging modules (component-base,
// component-helpers, apiserver, kubectl, ...) are released together and
// built against each other, and tidy moves only those opkit itself
// requires. One the project kept at k8s.io/api's version moves with it, and
// so does one it had let fall behind: an older k8s.io/kubectl imports API
// packages a newer k8s.io/api no longer has.
func lockstep(before, after []byte) []string {
	was, is := requirements(before), requirements(after)
	from, to := was["k8s.io/api"], is["k8s.io/api"]
	if from == "" || to == "" || from == to {
		return nil
	}
	var moves []string
	for mod := range was {
		if staging(mod, was[mod], from) && is[mod] != "" && semver.Compare(is[mod], to) < 0 {
			moves = append(moves, mod+"@"+to)
		}
	}
	sort.Strings(moves)
	return moves
}

// staging reports whether mod at version v is one of Kubernetes' staging
// modules at or behind k8s.io/api's version api: a k8s.io module released
// with Kubernetes, as v0.<minor>.<patch> (k8s.io/utils and kube-openapi have
// pseudo-versions, klog a /v2 path of its own).
func staging(mod, v, api string) bool {
	return strings.HasPrefix(mod, "k8s.io/") && mod != "k8s.io/api" &&
		semver.Major(v) == "v0" && semver.Prerelease(v) == "" && !module.IsPseudoVersion(v) &&
		semver.Compare(v, api) <= 0
}

// versionMoves reports each of movedModules, and each Kubernetes staging
// module lockstep moved, whose minor version the port moved, from the
// project's go.mod (before) to the port's (after).
func versionMoves(before, after []byte, rep *portReport) {
	was, is := requirements(before), requirements(after)
	mods := slices.Clone(movedModules)
	for mod, v := range was {
		if staging(mod, v, was["k8s.io/api"]) && !slices.Contains(mods, mod) {
			mods = append(mods, mod)
		}
	}
	sort.Strings(mods[len(movedModules):])
	for _, mod := range mods {
		if was[mod] == "" || was[mod] == is[mod] {
			continue
		}
		if is[mod] == "" {
			rep.mapped("go.mod", 0, mod, "no longer required: at the versions opkit is built with, nothing the project imports needs it")
			continue
		}
		if semver.MajorMinor(was[mod]) == semver.MajorMinor(is[mod]) {
			rep.mapped("go.mod", 0, mod, "moved from "+was[mod]+" to "+is[mod]+", a patch release")
			continue
		}
		why := "the version opkit is built with"
		switch {
		case slices.Contains(movedModules, mod):
		case was[mod] == was["k8s.io/api"]:
			why = "with k8s.io/api, as the project kept them in step"
		default:
			why = "with k8s.io/api, which it was behind: Kubernetes releases its staging modules together, and an older one does not build against a newer API"
		}
		rep.needs("go.mod", 0, mod, "moved from "+was[mod]+" to "+is[mod]+", "+why+": its breaking changes are the project's to take, and its tests say where (see its release notes)")
	}
}

// missingPackages is what go mod tidy's error says is missing, a line
// each, or its whole text.
func missingPackages(err error) string {
	var lines []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if strings.Contains(l, "does not contain package") || strings.Contains(l, "cannot find module providing package") {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	if len(lines) == 0 {
		return err.Error()
	}
	return strings.Join(lines, "; ")
}

// copyTree copies the project at src into dst, with its files' modes,
// leaving out .git, bin/ and test output.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if rel == ".git" || rel == "bin" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if rel == "cover.out" || !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, info.Mode().Perm())
	})
}

// portGoMod adds opkit to a kubebuilder project's go.mod: required, its
// command a tool, and replaced when it comes from a checkout.
func portGoMod(data []byte, version, replace string) ([]byte, error) {
	f, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		return nil, err
	}
	if replace != "" {
		version = develPseudoVersion
	}
	if err := module.Check(opkitModule, version); err != nil {
		return nil, fmt.Errorf("opkit version %s: %w", version, err)
	}
	if err := f.AddRequire(opkitModule, version); err != nil {
		return nil, err
	}
	if err := f.AddTool(opkitModule + "/cmd/opkit"); err != nil {
		return nil, err
	}
	if replace != "" {
		if err := f.AddReplace(opkitModule, "", replace, ""); err != nil {
			return nil, err
		}
	}
	f.Cleanup()
	return f.Format()
}

// envtestUse matches kubebuilder's Makefile's call of setup-envtest, which
// downloads the control plane's binaries.
var envtestUse = regexp.MustCompile(`"?\$\(ENVTEST\)"? use .*?-p path`)

// portMakefile points a kubebuilder Makefile's tests at opkit's control
// plane, which opkit envtest builds from the Go module proxy, rather than
// at setup-envtest's downloads.
func portMakefile(mk []byte, rep *portReport) []byte {
	lines := strings.Split(string(mk), "\n")
	found := false
	for i, l := range lines {
		switch {
		case envtestUse.MatchString(l):
			lines[i] = envtestUse.ReplaceAllString(l, "go tool opkit envtest")
			found = true
			rep.mapped("Makefile", i+1, "setup-envtest use", "go tool opkit envtest: kube-apiserver, etcd and kubectl built from the Go module proxy, nothing downloaded")
		case strings.HasPrefix(l, "setup-envtest: envtest"):
			lines[i] = "setup-envtest:" + strings.TrimPrefix(l, "setup-envtest: envtest")
			rep.mapped("Makefile", i+1, "setup-envtest's prerequisite envtest", "dropped: opkit envtest replaces setup-envtest")
		}
	}
	if !found {
		rep.needs("Makefile", 0, "envtest", "no call of setup-envtest found: run the tests with KUBEBUILDER_ASSETS=\"$(go tool opkit envtest)\"")
		return []byte(strings.Join(lines, "\n"))
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "\t") && strings.Contains(l, "$(ENVTEST)") {
			// A recipe still runs setup-envtest: it needs installing.
			return []byte(strings.Join(lines, "\n"))
		}
	}
	// No recipe runs setup-envtest any more: the targets that installed it
	// first (jobset's test: ... envtest ...) no longer do, since its
	// install fetches a controller-runtime branch the module proxy may not
	// serve.
	for i, l := range lines {
		target, prereqs, ok := strings.Cut(l, ":")
		if !ok || strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "#") || strings.ContainsAny(target, "=$ ") || strings.HasPrefix(prereqs, "=") || target == "envtest" {
			continue
		}
		deps, comment, _ := strings.Cut(prereqs, "#")
		fields := strings.Fields(deps)
		kept := slices.DeleteFunc(slices.Clone(fields), func(d string) bool { return d == "envtest" })
		if len(kept) == len(fields) {
			continue
		}
		lines[i] = target + ":"
		if len(kept) > 0 {
			lines[i] += " " + strings.Join(kept, " ")
		}
		if comment != "" || strings.Contains(prereqs, "#") {
			lines[i] += " #" + comment
		}
		rep.mapped("Makefile", i+1, target+"'s prerequisite envtest", "dropped: opkit envtest replaces setup-envtest, which no recipe runs now")
	}
	return []byte(strings.Join(lines, "\n"))
}
