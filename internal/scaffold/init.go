package scaffold

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/module"
)

// DevelVersion is the version a build of opkit from a checkout reports:
// not a version a go.mod can require.
const DevelVersion = "(devel)"

// develPseudoVersion is required, with a replace directive, when the opkit
// module comes from a local checkout: the zero pseudo-version, which the
// replace makes irrelevant.
const develPseudoVersion = "v0.0.0-00010101000000-000000000000"

// InitOptions are what opkit init is given.
type InitOptions struct {
	// Module is the new project's Go module path. Required.
	Module string
	// Domain suffixes every API group. Defaults to "example.com".
	Domain string
	// Name names the operator's binary, namespace, Lease and RBAC roles.
	// Defaults to the last element of Module.
	Name string
	// OpkitVersion is the opkit version the project requires: the running
	// opkit's. One that a go.mod cannot require (DevelVersion, or a
	// checkout's "+dirty" version) requires OpkitVendor or OpkitReplace.
	OpkitVersion string
	// OpkitVendor is a local opkit checkout to copy into the project, at
	// third_party/opkit, which go.mod's replace directives point at: the
	// project builds with no path outside it (CI, a fresh clone) until
	// opkit is released. Defaults to none.
	OpkitVendor string
	// OpkitReplace is a local opkit checkout that go.mod's replace
	// directive points at, in place: for work on opkit itself. Defaults to
	// none: the module proxy serves opkit. At most one of OpkitVendor and
	// OpkitReplace.
	OpkitReplace string
	// Fleet makes a fleet operator (pkg/fleet): the cluster it runs
	// against is the hub, and its members are the kubeconfigs in the
	// Secrets of its namespace there; cmd/fleet.go watches a kind in every
	// member. Defaults to false: an operator of one cluster.
	Fleet bool
	// Progress receives a line before each slow step. Defaults to none.
	Progress io.Writer
}

// initData is what the init templates see.
type initData struct {
	Module, Domain, Name       string
	OpkitVersion, OpkitReplace string
	ImageReplace               string // OpkitReplace's hack/image, quoted
	Vendored                   bool   // OpkitReplace is the copy in third_party/opkit
	Pad                        string // spaces as wide as Name, to align comments
	ExampleGroup               string
	Webhook                    bool // config/default serves webhooks (create webhook renders it again)
	Policy                     bool // config/default holds config/policy (create api --tenant-scoped renders it again)
	Fleet                      bool // a fleet operator (init --fleet): cmd/fleet.go
}

// defaultData is what config/default's kustomization is rendered from
// once p has more than opkit init made: webhooks, admission policies.
func defaultData(p *Project) initData {
	d := initData{Name: p.Name}
	for _, a := range p.APIs {
		d.Webhook = d.Webhook || a.Webhooks != nil
		d.Policy = d.Policy || a.TenantScoped
	}
	return d
}

func (o *InitOptions) defaults() {
	if o.Domain == "" {
		o.Domain = "example.com"
	}
	if o.Name == "" {
		o.Name = path.Base(o.Module)
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
}

func (o *InitOptions) validate(dir string) error {
	if err := validateModule(o.Module); err != nil {
		return err
	}
	if err := validateSubdomain("--domain", o.Domain, "example.com"); err != nil {
		return err
	}
	if err := validateName(o.Name); err != nil {
		return err
	}
	if o.OpkitVendor != "" && o.OpkitReplace != "" {
		return &InputError{Input: "--opkit-vendor", Value: o.OpkitVendor, Allowed: "give --opkit-vendor (a copy of opkit in the project) or --opkit-replace (the checkout itself), not both"}
	}
	if o.OpkitVendor == "" && o.OpkitReplace == "" && (module.Check(opkitModule, o.OpkitVersion) != nil || strings.Contains(o.OpkitVersion, "+")) {
		return fmt.Errorf("init: this opkit was built from a checkout (version %s), which no go.mod can require: pass --opkit-vendor <path to an opkit checkout> (a copy in the project, which builds anywhere) or --opkit-replace <path to an opkit checkout> (the checkout itself, for work on opkit), or install a released opkit (go install github.com/opkit-dev/opkit/cmd/opkit@latest)", o.OpkitVersion)
	}
	if o.OpkitVendor != "" {
		if err := checkOpkitCheckout("--opkit-vendor", o.OpkitVendor); err != nil {
			return err
		}
	}
	if o.OpkitReplace != "" {
		if err := checkOpkitCheckout("--opkit-replace", o.OpkitReplace); err != nil {
			return err
		}
	}
	return checkEmpty(dir)
}

// Init makes a new project in dir (which must be empty but for .git, or
// not exist), then runs go mod tidy there. Every input is checked before
// anything is written; if a write or go mod tidy fails, dir is left as it
// was.
func Init(ctx context.Context, dir string, opts InitOptions) error {
	opts.defaults()
	for _, p := range []*string{&opts.OpkitReplace, &opts.OpkitVendor} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return fmt.Errorf("init: %s: %w", *p, err)
		}
		*p = abs
	}
	if err := opts.validate(dir); err != nil {
		return err
	}
	fs, err := initFiles(opts)
	if err != nil {
		return err
	}
	replace := opts.OpkitReplace
	if opts.OpkitVendor != "" {
		fmt.Fprintf(opts.Progress, "Copying opkit from %s into %s...\n", opts.OpkitVendor, vendorDir)
		copied, err := vendorFiles(ctx, opts.OpkitVendor)
		if err != nil {
			return fmt.Errorf("init: %w", err)
		}
		maps.Copy(fs, copied)
		replace = vendorReplace
	}
	p := &Project{Layout: Layout, Domain: opts.Domain, Module: opts.Module, Name: opts.Name, Fleet: opts.Fleet}
	if err := recordBase(fs, templates, p, replace); err != nil {
		return err
	}
	return transact(dir, func() error {
		if err := fs.write(dir); err != nil {
			return err
		}
		fmt.Fprintf(opts.Progress, "Running go mod tidy in %s...\n", dir)
		if err := runIn(ctx, dir, "go", "mod", "tidy"); err != nil {
			return fmt.Errorf("init: %w; the directory is left as it was: check that the Go module proxy is reachable (GOPROXY, GOFLAGS), and that the opkit version %s exists", err, opts.OpkitVersion)
		}
		return nil
	})
}

// initFiles renders the new project in memory.
func initFiles(opts InitOptions) (files, error) {
	return initFilesFrom(templates, opts)
}

// initFilesFrom renders the new project in memory from the templates in
// tfs.
func initFilesFrom(tfs fs.FS, opts InitOptions) (files, error) {
	version := opts.OpkitVersion
	replace, imageReplace := "", ""
	vendored := opts.OpkitVendor != "" || opts.OpkitReplace == vendorReplace
	switch {
	case vendored:
		version = develPseudoVersion
		replace, imageReplace = vendorReplace, vendorReplace+"/hack/image"
	case opts.OpkitReplace != "":
		version = develPseudoVersion
		replace = strconv.Quote(opts.OpkitReplace)
		imageReplace = strconv.Quote(filepath.Join(opts.OpkitReplace, "hack", "image"))
	}
	data := initData{
		Module: opts.Module, Domain: opts.Domain, Name: opts.Name,
		OpkitVersion: version, OpkitReplace: replace, ImageReplace: imageReplace, Vendored: vendored,
		Pad:          strings.Repeat(" ", len(opts.Name)),
		ExampleGroup: "webapp",
		Fleet:        opts.Fleet,
	}
	out, err := renderTree(tfs, "init", data)
	if err != nil {
		return nil, err
	}
	for _, f := range toolsFiles {
		b, err := toolsFile(tfs, f, opts.Module)
		if err != nil {
			return nil, err
		}
		out["hack/tools/"+toolsPath(f)] = b
	}
	prom, err := prometheusFiles(tfs, data)
	if err != nil {
		return nil, err
	}
	maps.Copy(out, prom)
	if opts.Fleet {
		if out["cmd/fleet.go"], err = render(tfs, "fleet/fleet.go.tmpl", data); err != nil {
			return nil, err
		}
		if out["cmd/fleet_test.go"], err = render(tfs, "fleet/fleet_test.go.tmpl", data); err != nil {
			return nil, err
		}
	}
	p := &Project{Layout: Layout, Domain: opts.Domain, Module: opts.Module, Name: opts.Name, Fleet: opts.Fleet}
	if out[ProjectFile], err = p.marshal(); err != nil {
		return nil, err
	}
	return out, nil
}

const (
	toolsHeader = `// Code generated by opkit init; DO NOT EDIT.
// controller-gen and staticcheck, pinned as opkit pins them. opkit.mk runs
// them with go tool -modfile=hack/tools/go.mod, which builds each into Go's
// build cache once: every project that pins the same versions shares it.
`
	promtoolHeader = `// Code generated by opkit init; DO NOT EDIT.
// promtool, pinned as opkit pins it: make test-alerts runs it on the alert
// rules of config/prometheus, with go run, which caches it as go tool does.
// A module of its own: its dependencies are many.
`
	golangciHeader = `// Code generated by opkit init; DO NOT EDIT.
// golangci-lint, pinned as opkit pins it: make lint-golangci and the lint
// workflow run it with .golangci.yml (go tool). A module of its own: its
// dependencies are many, and its first build takes minutes, so make test
// leaves it out.
`
	kustomizeHeader = `// Code generated by opkit init; DO NOT EDIT.
// kustomize, pinned as opkit pins it: opkit.mk's build-installer, install
// and deploy render config/ with it (go tool), so that none needs a
// kubectl to render. A module of its own, as opkit's is.
`
)

// toolsFiles are the files of templates/tools a project's hack/tools
// holds: "<module>.go.mod" is hack/tools/<module>/go.mod (see toolsPath).
var toolsFiles = []string{"go.mod", "go.sum", "promtool.go.mod", "promtool.go.sum", "kustomize.go.mod", "kustomize.go.sum", "golangci-lint.go.mod", "golangci-lint.go.sum"}

// toolsPath is where a file of toolsFiles goes under hack/tools.
func toolsPath(name string) string {
	if mod, rest, ok := strings.Cut(name, "."); ok && strings.HasPrefix(rest, "go.") {
		return mod + "/" + rest
	}
	return name
}

// toolsFile is opkit's own hack/tools go.mod or go.sum, so that a project
// builds controller-gen and staticcheck at the versions opkit's own
// generated files come from, or hack/tools/promtool's (name
// "promtool.go.mod", "promtool.go.sum"), which tests opkit's alert rules,
// or hack/tools/kustomize's; a go.mod gets the project's module path.
func toolsFile(tfs fs.FS, name, module string) ([]byte, error) {
	b, err := fs.ReadFile(tfs, "templates/tools/"+name+".txt")
	if err != nil {
		return nil, fmt.Errorf("read the tools' %s: %w", name, err)
	}
	if !strings.HasSuffix(name, "go.mod") {
		return b, nil
	}
	// opkit's own comment speaks of opkit's Makefile.
	for strings.HasPrefix(string(b), "//") {
		_, after, _ := strings.Cut(string(b), "\n")
		b = []byte(after)
	}
	path, header := module+"/hack/tools", toolsHeader
	switch name {
	case "promtool.go.mod":
		path, header = path+"/promtool", promtoolHeader
	case "kustomize.go.mod":
		path, header = path+"/kustomize", kustomizeHeader
	case "golangci-lint.go.mod":
		path, header = path+"/golangci-lint", golangciHeader
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "module ") {
			lines[i] = "module " + path
		}
	}
	return []byte(header + strings.Join(lines, "\n")), nil
}

// transact runs change on dir and, if it fails, puts dir back as it was.
func transact(dir string, change func() error) error {
	snap, err := takeSnapshot(dir)
	if err != nil {
		return err
	}
	if err := change(); err != nil {
		return errors.Join(err, snap.restore(dir))
	}
	return nil
}
