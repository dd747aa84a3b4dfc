package scaffold

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// APIOptions are what opkit create api is given.
type APIOptions struct {
	// Group is the API group: its first part for a new resource (the
	// project's domain follows), or a built-in group with Resource false
	// ("" and "core" both name the core group; PROJECT records "core").
	Group   string
	Version string
	Kind    string
	// Namespaced scopes the new resource to namespaces; false makes it
	// cluster-scoped. For a built-in type, the cluster-scoped kinds opkit
	// knows (Namespace, Node, ClusterRole...) are cluster-scoped whatever it
	// says.
	Namespaced bool
	// Resource scaffolds the type and its CRD; false scaffolds a controller
	// for a built-in type.
	Resource bool
	// Controller scaffolds a controller and its test.
	Controller bool
	// TenantScoped makes the kind act as a ServiceAccount of its namespace
	// that its spec names: its controller reads and writes what the spec
	// asks for through Manager.WriterAs, so the API server decides each of
	// those requests as that ServiceAccount. It adds an admission policy
	// that lets a user name only a ServiceAccount they may impersonate
	// (config/policy, in config/default), and a sample of the namespace
	// owner's consent (config/samples). A namespaced resource only.
	TenantScoped bool
	// Progress receives a line before each slow step. Defaults to none.
	Progress io.Writer
	// Out receives, once the API is added, what was added and what to do
	// next: the files to edit and the commands to run. Defaults to none.
	Out io.Writer
}

// apiData is what the api templates see.
type apiData struct {
	Module, Domain              string
	Group, FullGroup, RBACGroup string
	Version, GroupVersion       string
	Kind, KindPlural, Lower     string
	Plural                      string
	Namespaced                  bool
	// TenantScoped: see APIOptions.TenantScoped.
	TenantScoped bool
	// Name is the project's name, which prefixes the names config/default
	// gives.
	Name                    string
	Alias, ImportPath       string
	Fixture, FixtureImports string
	// SampleName names the sample object: <kind>-sample, or
	// <kind>-<version>-sample when the kind is in another version already.
	SampleName string
	// Unserved: the type is marked +kubebuilder:unservedversion (with
	// unservedBlock), as a version of a kind whose versions do not convert
	// yet must be: served, the API server would convert it to the stored
	// version with strategy None, which changes apiVersion alone and drops
	// every field the versions name differently. create webhook
	// --conversion serves it.
	Unserved bool
	// otherVersions are those the project has the kind in already.
	otherVersions []string
	// hub is the version the kind's versions convert through, "" if they
	// do not convert (yet).
	hub string
}

// Paths of the files create api changes in place.
const (
	mainFile          = "cmd/main.go"
	defaultKustomize  = "config/default/kustomization.yaml"
	samplesKustomize  = "config/samples/kustomization.yaml"
	crdKustomize      = "config/crd/kustomization.yaml"
	controllerDir     = "internal/controller"
	markerImports     = "// +opkit:scaffold:imports"
	markerScheme      = "// +opkit:scaffold:scheme"
	markerControllers = "// +opkit:scaffold:controllers"
	markerKinds       = "// +opkit:scaffold:kinds"
	markerSamples     = "# +opkit:scaffold:samples"
	markerCRDs        = "# +opkit:scaffold:crds"
)

// CreateAPI adds an API, its controller or both to the project in dir,
// then runs go mod tidy and make manifests there. Every input is checked
// before anything is written; if a write or either command fails, the
// files it created are removed and those it changed restored (bin/
// excepted).
func CreateAPI(ctx context.Context, dir string, opts APIOptions) error {
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	p, err := LoadProject(dir)
	if err != nil {
		return err
	}
	d, err := opts.resolve(p)
	if err != nil {
		return err
	}
	if err := checkBaseVersion(dir, "create api"); err != nil {
		return err
	}
	fs, err := apiFiles(dir, p, opts, d)
	if err == nil {
		err = updateBase(dir, fs, p)
	}
	if err != nil {
		return err
	}
	err = transact(dir, func() error {
		if err := fs.write(dir); err != nil {
			return err
		}
		fmt.Fprintf(opts.Progress, "Running go mod tidy and make manifests in %s...\n", dir)
		return tidyAndGenerate(ctx, dir, "create api")
	})
	if err == nil && opts.Out != nil {
		c := &changes{dir: dir, out: files{}}
		fmt.Fprint(opts.Out, nextAfterAPI(p, opts, d, c.stored(d)))
	}
	return err
}

// resolve checks the options against the project and derives the names
// the templates use.
func (o *APIOptions) resolve(p *Project) (apiData, error) {
	if err := validateKind(o.Kind); err != nil {
		return apiData{}, err
	}
	if err := validateVersion(o.Version); err != nil {
		return apiData{}, err
	}
	if !o.Resource && !o.Controller {
		return apiData{}, errors.New("create api: --resource=false and --controller=false leave nothing to scaffold: keep at least one")
	}
	if o.TenantScoped && (!o.Resource || !o.Namespaced) {
		return apiData{}, &InputError{Input: "--tenant-scoped", Value: "true", Allowed: "only for a namespaced kind of the project's own (--resource and --namespaced on): it acts as a ServiceAccount of its namespace that its spec names"}
	}
	if !o.Resource && o.Group == "" {
		o.Group = "core" // one name for the core group, so that PROJECT finds it
	}
	// A built-in kind that has webhooks only (create webhook made it) gets
	// its controller.
	if a, ok := p.find(o.Group, o.Version, o.Kind); ok && (o.Resource || a.Resource || a.Controller) {
		return apiData{}, fmt.Errorf("create api: %w: the project has %s/%s %s already (see PROJECT)", ErrAPIExists, o.Group, o.Version, o.Kind)
	}
	d := newAPIData(p, o)
	if d.otherVersions = p.versions(o.Group, o.Kind); len(d.otherVersions) > 0 {
		d.SampleName = d.Lower + "-" + o.Version + "-sample"
	}
	d.hub = p.hub(o.Group, o.Kind)
	if !o.Resource {
		return d, o.resolveBuiltin(&d)
	}
	if err := validateSubdomain("--group", o.Group, "webapp"); err != nil {
		return apiData{}, err
	}
	for _, a := range p.APIs {
		if a.Resource && a.Version == o.Version && a.Group != o.Group {
			return apiData{}, &InputError{Input: "--group", Value: o.Group, Allowed: fmt.Sprintf("api/%s holds group %s already, and a project has one group per version: use --group %s, or another version", o.Version, a.Group, a.Group)}
		}
	}
	d.FullGroup = o.Group + "." + p.Domain
	if err := validateSubdomain("--group", d.FullGroup, "webapp"); err != nil {
		return apiData{}, err
	}
	d.RBACGroup = d.FullGroup
	return d.inVersion(o.Version), nil
}

// newAPIData is the names of o's kind that do not depend on whether the
// project owns it.
func newAPIData(p *Project, o *APIOptions) apiData {
	plural := pluralize(o.Kind)
	return apiData{
		Module: p.Module, Domain: p.Domain, Group: o.Group, Version: o.Version,
		Kind: o.Kind, KindPlural: plural, Lower: strings.ToLower(o.Kind), Plural: strings.ToLower(plural),
		Namespaced: o.Namespaced, TenantScoped: o.TenantScoped, Name: p.Name, SampleName: strings.ToLower(o.Kind) + "-sample",
	}
}

// inVersion returns d's kind in version v: its version's names changed.
func (d apiData) inVersion(v string) apiData {
	d.Version = v
	d.GroupVersion = d.FullGroup + "/" + v
	d.Alias = strings.ReplaceAll(strings.Split(d.Group, ".")[0], "-", "") + v
	d.ImportPath = d.Module + "/api/" + v
	return d
}

func (o *APIOptions) resolveBuiltin(d *apiData) error {
	pkg, ok := builtinGroups[o.Group]
	if !ok {
		return &InputError{Input: "--group", Value: o.Group, Allowed: "with --resource=false the group must be a built-in one (core, or " + builtinGroupList() + "); for a type of your own, leave --resource on"}
	}
	d.FullGroup = o.Group
	if pkg == "core" {
		d.FullGroup = ""
	}
	d.RBACGroup = d.FullGroup
	if d.RBACGroup == "" {
		d.RBACGroup = `""`
	}
	d.GroupVersion = strings.TrimPrefix(d.FullGroup+"/"+o.Version, "/")
	d.Alias = pkg + o.Version
	d.ImportPath = "k8s.io/api/" + pkg + "/" + o.Version
	d.Namespaced = o.Namespaced && !slices.Contains(clusterScoped, o.Kind)
	fx := builtinFixture(pkg, o.Version, o.Kind)
	if fx.fields != "" {
		d.Fixture = "\n" + fx.fields
	}
	for _, imp := range fx.imports {
		d.FixtureImports += "\n\t" + imp
	}
	return nil
}

// pluralize is the resource name of a kind, the way kubectl users expect
// it: Frigate frigates, Policy policies, Ingress ingresses.
func pluralize(kind string) string {
	lower := strings.ToLower(kind)
	switch {
	case strings.HasSuffix(lower, "s"), strings.HasSuffix(lower, "x"), strings.HasSuffix(lower, "z"),
		strings.HasSuffix(lower, "ch"), strings.HasSuffix(lower, "sh"):
		return kind + "es"
	case strings.HasSuffix(lower, "y") && len(lower) > 1 && !strings.ContainsRune("aeiou", rune(lower[len(lower)-2])):
		return kind[:len(kind)-1] + "ies"
	}
	return kind + "s"
}

// apiFiles renders every file create api writes, new or changed, in
// memory; a file it would create that exists is an error.
func apiFiles(dir string, p *Project, o APIOptions, d apiData) (files, error) {
	return (&changes{dir: dir, out: files{}}).api(p, o, d)
}

// api renders create api's files with c's templates.
func (c *changes) api(p *Project, o APIOptions, d apiData) (files, error) {
	if o.Resource {
		c.resource(d)
	}
	if o.Controller {
		c.controller(o, d)
	}
	a := API{Group: o.Group, Version: o.Version, Kind: o.Kind, Namespaced: d.Namespaced, Resource: o.Resource, Controller: o.Controller, TenantScoped: o.TenantScoped}
	if i := p.index(o.Group, o.Version, o.Kind); i >= 0 { // webhooks only, so far
		a.Webhooks = p.APIs[i].Webhooks
		p.APIs[i] = a
	} else {
		p.APIs = append(p.APIs, a)
	}
	if o.TenantScoped {
		c.tenancy(p, d)
	}
	if d.hub != "" {
		c.webhookTests(p) // the new spoke, in their schemes
	}
	if d.hub != "" || o.Controller {
		c.controllerConversions(p)
	}
	b, err := p.marshal()
	c.fail(err)
	c.out[ProjectFile] = b
	return c.out, c.err
}

// changes collects the files of a create api and the first error.
type changes struct {
	dir  string
	tmpl fs.FS // the templates; nil for the embedded ones
	out  files
	err  error
}

func (c *changes) fail(err error) {
	if c.err == nil && err != nil {
		c.err = err
	}
}

// create renders a new file from a template under api/; it must not
// exist.
func (c *changes) create(path, tmpl string, d apiData) {
	c.createFrom(path, "api/"+tmpl, d, apiExists(path))
}

// apiExists is the error of a file create api would write that exists.
func apiExists(path string) error {
	return fmt.Errorf("create api: %w: %s exists already; remove it to scaffold it again", ErrAPIExists, path)
}

// createFrom renders a new file from the template at name; exists is the
// error if the file exists.
func (c *changes) createFrom(path, name string, data any, exists error) {
	if c.err != nil {
		return
	}
	if _, err := os.Stat(filepath.Join(c.dir, path)); err == nil {
		c.fail(exists)
		return
	}
	c.renderTo(path, name, data)
}

// createMissing renders a file from the template at name unless it exists.
func (c *changes) createMissing(path, name string, data any) {
	if _, err := os.Stat(filepath.Join(c.dir, path)); err != nil {
		c.renderTo(path, name, data)
	}
}

// renderTo renders path from the template at name, whether or not the
// file exists: for the files opkit owns, which it renders again.
func (c *changes) renderTo(path, name string, data any) {
	if c.err != nil {
		return
	}
	b, err := render(c.tmpl, name, data)
	c.fail(err)
	c.out[path] = b
}

// current is a file as this create api has it so far: rendered, else on
// disk.
func (c *changes) current(path string) []byte {
	if b, ok := c.out[path]; ok {
		return b
	}
	b, err := os.ReadFile(filepath.Join(c.dir, path))
	if err != nil {
		c.fail(fmt.Errorf("create api: read %s: %w (opkit init made it; create api adds to it)", path, err))
	}
	return b
}

// insert adds lines to a file at its marker.
func (c *changes) insert(path, marker string, lines ...string) {
	if c.err != nil {
		return
	}
	b, err := insertAt(path, c.current(path), marker, lines...)
	if c.err == nil {
		c.fail(err)
		c.out[path] = b
	}
}

func (c *changes) resource(d apiData) {
	gv := "api/" + d.Version + "/groupversion_info.go"
	if _, err := os.Stat(filepath.Join(c.dir, gv)); err != nil {
		b, err := render(c.tmpl, "api/groupversion_info.go.tmpl", d)
		c.fail(err)
		c.out[gv] = b
	}
	c.insert(gv, markerKinds, "&"+d.Kind+"{}, &"+d.Kind+"List{},")
	switch {
	case len(d.otherVersions) == 0:
	case d.hub != "":
		// Served at once: it converts through the hub like the others.
		c.spoke(webhookData{apiData: d.inVersion(d.hub)}, d.Version, apiExists)
	default:
		d.Unserved = true
		c.keepStored(d)
	}
	c.create(typesFile(d.Version, d.Lower), "types.go.tmpl", d)
	sample := path.Base(sampleFile(d))
	c.create(sampleFile(d), "sample.yaml.tmpl", d)
	c.insert(samplesKustomize, markerSamples, "- "+sample)
	c.insert(crdKustomize, markerCRDs, "- bases/"+d.FullGroup+"_"+d.Plural+".yaml")
	c.roles(d)
	c.insert(mainFile, markerImports, d.Alias+" \""+d.ImportPath+"\"")
	c.insert(mainFile, markerScheme, d.Alias+".AddToScheme(scheme),")
}

// roles adds the admin, editor and viewer ClusterRoles of d's kind, once
// per kind whatever its versions, to config/rbac.
func (c *changes) roles(d apiData) {
	for _, r := range []string{"admin", "editor", "viewer"} {
		file := d.Lower + "_" + r + "_role.yaml"
		c.createMissing("config/rbac/"+file, "api/"+r+"_role.yaml.tmpl", d)
		c.insert(rbacKustomize, markerRBAC, "- "+file)
	}
}

// Paths of the files of the tenant-scoped kinds (create api
// --tenant-scoped), and where the kinds' files are added.
const (
	policyDir       = "config/policy"
	policyKustomize = policyDir + "/kustomization.yaml"
	markerPolicies  = "# +opkit:scaffold:policies"
)

// tenancy adds what a tenant-scoped kind needs beside its type and
// controller: the admission policy that pins the ServiceAccount it may
// name, included by config/default, and a sample of a namespace owner's
// consent beside its sample. p holds the kind already.
func (c *changes) tenancy(p *Project, d apiData) {
	file := d.Lower + "_service_account.yaml"
	c.createMissing(policyKustomize, "api/config/policy_kustomization.yaml.tmpl", d)
	c.createMissing(policyDir+"/"+file, "api/config/service_account_policy.yaml.tmpl", d)
	c.insert(policyKustomize, markerPolicies, "- "+file)
	c.renderTo(defaultKustomize, "init/config/default/kustomization.yaml.tmpl", defaultData(p))
	c.create(tenancyFile(d), "config/tenancy.yaml.tmpl", d)
	c.insert(samplesKustomize, markerSamples, "- "+d.TenancyFile())
}

// tenancyFile is the sample of the consent d's kind needs.
func tenancyFile(d apiData) string {
	return strings.TrimSuffix(sampleFile(d), ".yaml") + "_tenancy.yaml"
}

// TenancyFile is the name of d's tenancyFile in config/samples.
func (d apiData) TenancyFile() string { return path.Base(tenancyFile(d)) }

func (c *changes) controller(o APIOptions, d apiData) {
	name, test, unit := "controller.go.tmpl", "controller_test.go.tmpl", "controller_unit_test.go.tmpl"
	if !o.Resource {
		name, test, unit = "builtin_controller.go.tmpl", "builtin_controller_test.go.tmpl", "builtin_controller_unit_test.go.tmpl"
	}
	c.create(controllerDir+"/"+d.Lower+"_controller.go", name, d)
	c.create(controllerDir+"/"+d.Lower+"_controller_test.go", test, d)
	c.create(controllerDir+"/"+d.Lower+"_controller_unit_test.go", unit, d)
	if _, err := os.Stat(filepath.Join(c.dir, controllerDir, "main_test.go")); err != nil {
		c.create(controllerDir+"/main_test.go", "main_test.go.tmpl", d)
	}
	if o.TenantScoped {
		c.createMissing(controllerDir+"/tenancy_test.go", "api/tenancy_test.go.tmpl", d)
	}
	c.insert(mainFile, markerImports, "\""+d.Module+"/"+controllerDir+"\"")
	c.insert(mainFile, markerControllers,
		"if _, err := controller.Setup"+d.Kind+"(mgr); err != nil {",
		"\treturn err",
		"}")
}

// controllerConversions serves, in the controllers' tests, the conversion
// of every kind that converts: for their main_test.go when this create api
// makes it.
func (c *changes) controllerConversions(p *Project) {
	for _, a := range p.APIs {
		if a.Webhooks == nil || !a.Webhooks.Conversion {
			continue
		}
		hub, err := webhookDataOf(p, a)
		c.fail(err)
		if c.err == nil {
			c.controllerConversion(p, hub)
		}
	}
}

// typesFile is the file of a kind's type in a version.
func typesFile(version, lower string) string {
	return "api/" + version + "/" + lower + "_types.go"
}

// sampleFile is the sample of d's kind in d's version.
func sampleFile(d apiData) string {
	return "config/samples/" + strings.ReplaceAll(d.Group, ".", "_") + "_" + d.Version + "_" + d.Lower + ".yaml"
}

// storageMarker marks the version of a kind that the API server stores.
const storageMarker = "// +kubebuilder:storageversion"

// unservedBlock is what create api puts above the type of a version of a
// kind whose versions do not convert yet, and create webhook --conversion
// removes: a comment of its own, which controller-gen reads the marker of
// but leaves out of the CRD's description.
const unservedBlock = `// Not served until the kind's versions convert (opkit create webhook
// --conversion removes this): the API server would convert it with
// strategy None, dropping every field the versions name differently.
// +kubebuilder:unservedversion

`

// UnservedBlock is unservedBlock, for the types template.
func (apiData) UnservedBlock() string { return unservedBlock }

// keepStored marks the first of d's kind's other versions as the stored
// one when none is: a CRD of several versions stores one, controller-gen
// refuses to guess which, and d's version is not served.
func (c *changes) keepStored(d apiData) {
	if c.stored(d) != "" {
		return
	}
	path := typesFile(d.otherVersions[0], d.Lower)
	b := c.current(path)
	typeLine := "type " + d.Kind + " struct {"
	out, err := insertAt(path, b, typeLine, storageMarker)
	if err != nil {
		err = fmt.Errorf("create api: mark %s the stored version of %s: %s has no line %q to put %q above; add the marker to the type yourself, then run create api again", d.otherVersions[0], d.Kind, path, typeLine, storageMarker)
	}
	c.fail(err)
	if c.err == nil {
		c.out[path] = out
	}
}

// stored returns the version of d's kind, other than d's, whose type is
// marked +kubebuilder:storageversion, or "".
func (c *changes) stored(d apiData) string {
	for _, v := range d.otherVersions {
		if v != d.Version && strings.Contains(string(c.current(typesFile(v, d.Lower))), storageMarker) {
			return v
		}
	}
	return ""
}

// tidyAndGenerate runs go mod tidy and make manifests in dir for command.
// A controller imports the apply configurations that make manifests
// generates, so the first tidy lets that import be missing (-e) and a
// second settles go.mod with it.
func tidyAndGenerate(ctx context.Context, dir, command string) error {
	if err := runIn(ctx, dir, "go", "mod", "tidy", "-e"); err != nil {
		return fmt.Errorf("%s: %w; the project is left as it was", command, err)
	}
	if err := runIn(ctx, dir, "make", "manifests"); err != nil {
		return fmt.Errorf("%s: %w; the project is left as it was: fix what make manifests reports (run it yourself to see), then run %s again", command, err, command)
	}
	if err := runIn(ctx, dir, "go", "mod", "tidy"); err != nil {
		return fmt.Errorf("%s: %w; the project is left as it was", command, err)
	}
	return nil
}
