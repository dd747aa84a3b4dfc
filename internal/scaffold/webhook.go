package scaffold

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// WebhookOptions are what opkit create webhook is given: the API version's
// kind, as opkit create api made it, and at least one hook.
type WebhookOptions struct {
	Group   string
	Version string
	Kind    string
	// Defaulting scaffolds a Defaulter, served at the kind's mutating path.
	Defaulting bool
	// Validation scaffolds a Validator, served at the kind's validating
	// path.
	Validation bool
	// RequesterCheck gives the Validator a requester.Checker (package
	// webhook/requester), made from the manager's client, and calls it in
	// ValidateCreate and ValidateUpdate with the permissions the object
	// asks the operator to use for its requester: for a kind whose spec
	// names other objects. Needs Validation.
	RequesterCheck bool
	// Conversion makes Version the hub of the kind's conversion: every
	// other version the project has converts to and from it.
	Conversion bool
	// ExternalAPIPath is the import path of the Go package of a custom
	// resource of another module, such as cert-manager's
	// github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1. Group
	// is then the resource's full group (or its first part, with
	// ExternalAPIDomain). Not needed once PROJECT records the kind.
	ExternalAPIPath string
	// ExternalAPIDomain, if set, follows Group: --group cert-manager
	// --external-api-domain io is cert-manager.io, as kubebuilder takes it.
	ExternalAPIDomain string
	// ExternalAPIModule is the module to require, module@version or module
	// (its latest version). Defaults to the module of ExternalAPIPath, at
	// its latest version unless go.mod requires it already.
	ExternalAPIModule string
	// ExternalAPICRDs is a CRD file, or a directory of them, that holds
	// the kind's CRD. Defaults to the YAML files in the module's source.
	ExternalAPICRDs string
	// Progress receives a line before each slow step. Defaults to none.
	Progress io.Writer
	// Out receives, once the webhooks are added, what was added and what
	// to do next: the files to edit. Defaults to none.
	Out io.Writer
}

// webhookData is what the webhook templates see: the kind's API names and
// the webhooks' paths.
type webhookData struct {
	apiData
	Name                     string // the project's
	MutatePath, ValidatePath string
	CRD                      string // the CRD's name: plural.group
	RequesterCheck           bool
	// Foreign: the kind is one the project does not own: built in, or
	// External, another module's custom resource.
	Foreign, External bool
	// Qualifier is the DNS suffix of the webhooks' names and the example
	// label and annotation: the kind's group for a kind of the project's,
	// the project's domain for a built-in one.
	Qualifier string
	// GroupVersionVar names the kind's package's GroupVersion variable:
	// GroupVersion in the project's api/, SchemeGroupVersion in k8s.io/api.
	GroupVersionVar string
}

// Paths of the files create webhook changes in place, and their markers.
const (
	mainTestFile        = "cmd/main_test.go"
	e2eMainTestFile     = "test/e2e/main_test.go"
	cmdWebhookFile      = "cmd/webhook.go"
	webhookDir          = "internal/webhook"
	rbacKustomize       = "config/rbac/kustomization.yaml"
	markerWebhooks      = "// +opkit:scaffold:webhooks"
	markerFlags         = "// +opkit:scaffold:flags"
	markerFlagSet       = "// +opkit:scaffold:flagset"
	markerMgrOptions    = "// +opkit:scaffold:manager-options"
	markerStart         = "// +opkit:scaffold:start"
	markerFlagDefaults  = "// +opkit:scaffold:flag-defaults"
	markerTargets       = "// +opkit:scaffold:webhook-targets"
	markerHooks         = "// +opkit:scaffold:hooks"
	markerSetup         = "// +opkit:scaffold:setup"
	markerConvertCRDs   = "// +opkit:scaffold:convert-crds"
	markerConversions   = "// +opkit:scaffold:conversions"
	markerCRDPatches    = "# +opkit:scaffold:crdpatches"
	markerRBAC          = "# +opkit:scaffold:rbac"
	webhookVersionV1    = "v1"
	webhookConfigSuffix = "-webhook-configuration"
)

// CreateWebhook adds webhooks for an API's kind to the project in dir, and
// the webhook server, its certificates and config/webhook if the project
// had none, then runs go mod tidy and make manifests there. Every input is
// checked before anything is written; if a write or either command fails,
// the project is put back as it was (bin/ excepted).
func CreateWebhook(ctx context.Context, dir string, opts WebhookOptions) error {
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	p, err := LoadProject(dir)
	if err != nil {
		return err
	}
	if err := opts.joinDomain(); err != nil {
		return err
	}
	if opts.newExternal(p) {
		return createExternalWebhook(ctx, dir, p, opts)
	}
	d, err := opts.resolve(p)
	if err != nil {
		return err
	}
	if err := checkBaseVersion(dir, "create webhook"); err != nil {
		return err
	}
	fs, err := webhookFiles(dir, p, opts, d)
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
		return tidyAndGenerate(ctx, dir, "create webhook")
	})
	if err == nil && opts.Out != nil {
		fmt.Fprint(opts.Out, nextAfterWebhook(p, opts, d))
	}
	return err
}

// resolve checks the options against the project and derives the names
// the templates use.
func (o *WebhookOptions) resolve(p *Project) (webhookData, error) {
	if err := o.checkCommon(); err != nil {
		return webhookData{}, err
	}
	a, ok := p.find(o.Group, o.Version, o.Kind)
	if !ok || !a.Resource {
		return o.resolveForeign(p)
	}
	if err := o.checkNew(a.Webhooks); err != nil {
		return webhookData{}, err
	}
	if o.Conversion {
		if err := o.checkConversion(p); err != nil {
			return webhookData{}, err
		}
	}
	d, err := webhookDataOf(p, a)
	d.RequesterCheck = o.RequesterCheck
	return d, err
}

// GroupKindOf is the validator's expression of the kind's group and kind:
// from its package's GroupVersion variable, or, for another module's kind,
// whose package may name it either way, spelled out.
func (d webhookData) GroupKindOf() string {
	if d.External {
		return `schema.GroupKind{Group: "` + d.FullGroup + `", Kind: "` + d.Kind + `"}`
	}
	return d.Alias + "." + d.GroupVersionVar + `.WithKind("` + d.Kind + `").GroupKind()`
}

// checkCommon checks what every create webhook must have right.
func (o *WebhookOptions) checkCommon() error {
	if err := validateKind(o.Kind); err != nil {
		return err
	}
	if err := validateVersion(o.Version); err != nil {
		return err
	}
	if !o.Defaulting && !o.Validation && !o.Conversion {
		return &InputError{Input: "--defaulting, --validation, --conversion", Value: "none", Allowed: "create webhook needs at least one of them"}
	}
	if o.RequesterCheck && !o.Validation {
		return &InputError{Input: "--requester-check", Value: "without --validation", Allowed: "the check is made by the validator: add --validation (a kind's existing validator can call requester.Checker.Check itself)"}
	}
	return nil
}

// webhookDataOf derives the names the webhook templates use for a, an API
// type of p's own or a built-in one.
func webhookDataOf(p *Project, a API) (webhookData, error) {
	if !a.Resource {
		return foreignData(p, a)
	}
	ao := APIOptions{Group: a.Group, Version: a.Version, Kind: a.Kind, Namespaced: a.Namespaced, Resource: true}
	others := *p
	others.APIs = nil // resolve refuses an API the project has
	for _, b := range p.APIs {
		if b != a {
			others.APIs = append(others.APIs, b)
		}
	}
	ad, err := ao.resolve(&others)
	if err != nil {
		return webhookData{}, err
	}
	slug := strings.ReplaceAll(ad.FullGroup, ".", "-") + "-" + ad.Version + "-" + ad.Lower
	return webhookData{
		apiData: ad, Name: p.Name,
		MutatePath: "/mutate-" + slug, ValidatePath: "/validate-" + slug,
		CRD: ad.Plural + "." + ad.FullGroup, Qualifier: ad.FullGroup, GroupVersionVar: "GroupVersion",
	}, nil
}

// checkNew refuses a hook the kind has already.
func (o *WebhookOptions) checkNew(w *Webhooks) error {
	if w == nil {
		return nil
	}
	var dup []string
	if o.Defaulting && w.Defaulting {
		dup = append(dup, "--defaulting")
	}
	if o.Validation && w.Validation {
		dup = append(dup, "--validation")
	}
	if o.Conversion && w.Conversion {
		dup = append(dup, "--conversion")
	}
	if len(dup) > 0 {
		return fmt.Errorf("create webhook: %w: the project has %s for %s/%s %s already (see PROJECT); leave it out", ErrWebhookExists, strings.Join(dup, " and "), o.Group, o.Version, o.Kind)
	}
	return nil
}

// webhookFiles renders every file create webhook writes, new or changed,
// in memory.
func webhookFiles(dir string, p *Project, o WebhookOptions, d webhookData) (files, error) {
	return (&changes{dir: dir, out: files{}}).webhook(p, o, d)
}

// webhook renders create webhook's files with c's templates.
func (c *changes) webhook(p *Project, o WebhookOptions, d webhookData) (files, error) {
	i := p.index(o.Group, o.Version, o.Kind)
	if i < 0 { // a built-in kind the project has no controller of
		i = len(p.APIs)
		p.APIs = append(p.APIs, API{Group: o.Group, Version: o.Version, Kind: o.Kind, Namespaced: d.Namespaced})
		if d.External {
			p.APIs[i].External, p.APIs[i].Path, p.APIs[i].Plural = true, d.ImportPath, d.Plural
		}
	}
	w := p.APIs[i].Webhooks
	if w == nil {
		w = &Webhooks{WebhookVersion: webhookVersionV1}
		p.APIs[i].Webhooks = w
	}
	w.Defaulting = w.Defaulting || o.Defaulting
	w.Validation = w.Validation || o.Validation
	w.Conversion = w.Conversion || o.Conversion
	w.RequesterCheck = w.RequesterCheck || o.RequesterCheck
	c.server(p, d)
	if o.Defaulting || o.Validation {
		c.admission(o, d)
	}
	if o.Conversion {
		c.conversion(p, d)
	}
	if d.External {
		c.external(d)
	}
	c.webhookTests(p)
	c.controllerConversions(p)
	b, err := p.marshal()
	c.fail(err)
	c.out[ProjectFile] = b
	return c.out, c.err
}

// server adds what every project with webhooks has once: the server's
// flags and certificates in cmd/, config/webhook and its wiring in
// config/default and config/rbac. The files opkit owns are rendered again
// from PROJECT, which already holds this call's webhooks.
func (c *changes) server(p *Project, d webhookData) {
	c.createMissing(cmdWebhookFile, "webhook/cmd_webhook.go.tmpl", d)
	c.insert(mainFile, markerFlags, "webhook webhookFlags")
	c.insert(mainFile, markerFlagSet, "f.webhook.register(fs)")
	c.insert(mainFile, markerMgrOptions, "Webhook: f.webhookOptions(local),")
	c.insert(mainFile, markerStart,
		"stopCertificates, err := startCertificates(ctx, cfg, mgr, f, log)",
		"if err != nil {",
		"\treturn err",
		"}",
		"defer stopCertificates()")
	c.insert(mainTestFile, markerFlagDefaults, "want.webhook = webhookDefaults()")

	cfg := webhookConfigOf(p)
	if cfg.Mutating {
		c.insert(cmdWebhookFile, markerTargets, "t.MutatingWebhooks = []string{\""+p.Name+"-mutating"+webhookConfigSuffix+"\"}")
	}
	if cfg.Validating {
		c.insert(cmdWebhookFile, markerTargets, "t.ValidatingWebhooks = []string{\""+p.Name+"-validating"+webhookConfigSuffix+"\"}")
	}
	for _, crd := range cfg.CRDs {
		c.insert(cmdWebhookFile, markerTargets, "t.CRDs = append(t.CRDs, \""+crd+"\")")
	}
	c.renderTo("config/webhook/kustomization.yaml", "webhook/config/webhook_kustomization.yaml.tmpl", cfg)
	c.createMissing("config/webhook/service.yaml", "webhook/config/service.yaml.tmpl", cfg)
	c.renderTo(defaultKustomize, "init/config/default/kustomization.yaml.tmpl", defaultData(p))
	c.createMissing("config/default/manager_webhook_patch.yaml", "webhook/config/manager_webhook_patch.yaml.tmpl", cfg)
	c.renderTo("config/rbac/webhook_certs_role.yaml", "webhook/config/webhook_certs_role.yaml.tmpl", cfg)
	c.createMissing("config/rbac/webhook_certs_role_binding.yaml", "webhook/config/webhook_certs_role_binding.yaml.tmpl", cfg)
	c.insert(rbacKustomize, markerRBAC, "- webhook_certs_role.yaml", "- webhook_certs_role_binding.yaml")
}

// webhookConfig is what the project's webhooks are, all kinds together:
// what config/webhook, the certificates' RBAC and their targets hold.
type webhookConfig struct {
	Name                            string
	Admission, Mutating, Validating bool
	CRDs                            []string // that convert
}

func webhookConfigOf(p *Project) webhookConfig {
	cfg := webhookConfig{Name: p.Name}
	for _, a := range p.APIs {
		if a.Webhooks == nil {
			continue
		}
		cfg.Mutating = cfg.Mutating || a.Webhooks.Defaulting
		cfg.Validating = cfg.Validating || a.Webhooks.Validation
		if a.Webhooks.Conversion {
			cfg.CRDs = append(cfg.CRDs, crdName(p, a))
		}
	}
	cfg.Admission = cfg.Mutating || cfg.Validating
	return cfg
}

// crdName is the name of an API's CRD.
func crdName(p *Project, a API) string {
	return strings.ToLower(pluralize(a.Kind)) + "." + a.Group + "." + p.Domain
}

// admission adds the kind's defaulter, validator or both, their tests,
// and their registration.
func (c *changes) admission(o WebhookOptions, d webhookData) {
	pkg := path.Join(webhookDir, d.Version)
	c.webhookPackage(d)
	kindFile := pkg + "/" + d.Lower + "_webhook.go"
	c.createMissing(kindFile, "webhook/webhook.go.tmpl", d)
	validator := "Validator: " + d.Kind + "Validator{},"
	if o.RequesterCheck {
		validator = "Validator: " + d.Kind + "Validator{Requester: checker},"
		c.insert(kindFile, markerImports, `"github.com/opkit-dev/opkit/pkg/webhook/requester"`)
		c.createMissing(pkg+"/requester_test.go", "webhook/requester_test.go.tmpl", d)
		c.insert(kindFile, markerSetup,
			"checker, err := requester.New(mgr.UncachedClient(), requester.Options{})",
			"if err != nil {",
			"\treturn err",
			"}")
	}
	for _, h := range []struct {
		on         bool
		name, hook string
	}{
		{o.Defaulting, "defaulter", "Defaulter: " + d.Kind + "Defaulter{},"},
		{o.Validation, "validator", validator},
	} {
		if !h.on {
			continue
		}
		for _, f := range []string{h.name + ".go", h.name + "_test.go"} {
			p := pkg + "/" + d.Lower + "_" + f
			c.createFrom(p, "webhook/"+f+".tmpl", d, webhookExists(p))
		}
		c.insert(kindFile, markerHooks, h.hook)
	}
	c.registerInMain(d, "webhook"+d.Version+".Setup"+d.Kind+"Webhook")
}

// webhookPackage makes internal/webhook/<version> if the project lacks it.
// (webhookTests fills its tests' setup.)
func (c *changes) webhookPackage(d webhookData) {
	pkg := path.Join(webhookDir, d.Version)
	c.createMissing(pkg+"/doc.go", "webhook/doc.go.tmpl", d)
	c.createMissing(pkg+"/main_test.go", "webhook/main_test.go.tmpl", d)
}

// webhookTests has the tests of every webhook package serve every webhook
// of the project, as cmd/main.go does: their control plane calls each of
// config/webhook's and converts each CRD that converts, whichever
// package's test writes the object. It adds, from PROJECT, what each
// package's main_test.go lacks, so that a package made later catches up.
func (c *changes) webhookTests(p *Project) {
	for _, v := range webhookVersions(p) {
		test := path.Join(webhookDir, v, "main_test.go")
		if !c.exists(test) {
			continue
		}
		for _, a := range p.APIs {
			if a.Webhooks == nil {
				continue
			}
			d, err := webhookDataOf(p, a)
			if err != nil {
				c.fail(err)
				return
			}
			c.insert(test, markerImports, "webhook"+a.Version+" \""+d.Module+"/"+webhookDir+"/"+a.Version+"\"")
			if !d.Foreign || d.External { // clientgoscheme has the built-in kinds
				c.insert(test, markerImports, d.Alias+" \""+d.ImportPath+"\"")
				c.insert(test, markerScheme, d.Alias+".AddToScheme(scheme),")
			}
			if a.Webhooks.Defaulting || a.Webhooks.Validation {
				c.insert(test, markerWebhooks, "webhook"+a.Version+".Setup"+a.Kind+"Webhook(mgr),")
			}
			if a.Webhooks.Conversion {
				for _, other := range p.versions(a.Group, a.Kind) {
					o := d.inVersion(other)
					c.insert(test, markerImports, o.Alias+" \""+o.ImportPath+"\"")
					c.insert(test, markerScheme, o.Alias+".AddToScheme(scheme),")
				}
				c.insert(test, markerConvertCRDs, "\""+d.CRD+"\",")
				c.insert(test, markerWebhooks, "webhook"+a.Version+".Setup"+a.Kind+"Conversion(mgr),")
			}
		}
	}
}

// webhookVersions are the versions whose package internal/webhook/<version>
// serves a webhook, in PROJECT's order.
func webhookVersions(p *Project) []string {
	var vs []string
	for _, a := range p.APIs {
		if a.Webhooks != nil && !slices.Contains(vs, a.Version) {
			vs = append(vs, a.Version)
		}
	}
	return vs
}

// registerInMain has cmd/main.go call setup, a function of the webhook
// package of d's version.
func (c *changes) registerInMain(d webhookData, setup string) {
	c.insert(mainFile, markerImports, "webhook"+d.Version+" \""+d.Module+"/"+webhookDir+"/"+d.Version+"\"")
	c.insert(mainFile, markerWebhooks,
		"if err := "+setup+"(mgr); err != nil {",
		"\treturn err",
		"}")
}

// checkConversion refuses a conversion hub for a kind that the project has
// in one version only.
func (o *WebhookOptions) checkConversion(p *Project) error {
	if len(p.versions(o.Group, o.Kind)) < 2 {
		return &InputError{Input: "--conversion", Value: o.Group + "/" + o.Version + " " + o.Kind,
			Allowed: "conversion needs the kind in at least two versions, and the project has it in " + o.Version + " only: add another with opkit create api --group " + o.Group + " --version <another> --kind " + o.Kind + " --controller=false"}
	}
	return nil
}

// spokeData is what the spoke templates see: the hub's names, and the
// spoke's version, alias and import path.
type spokeData struct {
	webhookData
	Spoke, SpokeAlias, SpokeImportPath string
}

// conversion makes d's version the hub of its kind and every other version
// a spoke that converts to and from it, serves them all, serves the
// conversion in the operator and in the tests, tests a round trip of the
// samples and points the CRD at the webhook.
func (c *changes) conversion(p *Project, d webhookData) {
	pkg := path.Join(webhookDir, d.Version)
	hub := "api/" + d.Version + "/" + d.Lower + "_conversion.go"
	c.createFrom(hub, "webhook/hub.go.tmpl", d, webhookExists(hub))
	c.serve(typesFile(d.Version, d.Lower))
	c.webhookPackage(d)
	for _, v := range p.versions(d.Group, d.Kind) {
		if v != d.Version {
			c.spoke(d, v, webhookExists)
		}
	}
	for _, f := range []string{"conversion.go", "conversion_test.go"} {
		c.createFrom(pkg+"/"+d.Lower+"_"+f, "webhook/"+f+".tmpl", d, webhookExists(pkg+"/"+d.Lower+"_"+f))
	}
	c.createMissing(pkg+"/roundtrip_test.go", "webhook/roundtrip_test.go.tmpl", d)
	c.registerInMain(d, "webhook"+d.Version+".Setup"+d.Kind+"Conversion")
	c.e2eConversion(d)
	c.crdPatch(d)
}

// webhookExists is the error of a file create webhook would write that
// exists.
func webhookExists(path string) error {
	return fmt.Errorf("create webhook: %w: %s exists already; remove it to scaffold it again", ErrWebhookExists, path)
}

// spoke makes version v of hub's kind a spoke, served, that converts to
// and from the hub with its ConvertTo and ConvertFrom. exists is the error
// of a file it would write that exists.
func (c *changes) spoke(hub webhookData, v string, exists func(path string) error) {
	sd := hub.inVersion(v)
	s := spokeData{webhookData: hub, Spoke: v, SpokeAlias: sd.Alias, SpokeImportPath: sd.ImportPath}
	file := spokeFile(v, hub.Lower)
	c.createFrom(file, "webhook/spoke.go.tmpl", s, exists(file))
	c.createMissing("api/"+v+"/conversion.go", "webhook/copy.go.tmpl", s)
	c.serve(typesFile(v, hub.Lower))
}

// serve removes the unservedversion marker create api put on a type, if
// the type is there and has it.
func (c *changes) serve(path string) {
	if !c.exists(path) {
		return
	}
	b := c.current(path)
	if out := strings.Replace(string(b), unservedBlock, "", 1); out != string(b) {
		c.out[path] = []byte(out)
	}
}

// exists reports whether path is in the project or rendered by this
// change.
func (c *changes) exists(path string) bool {
	if _, ok := c.out[path]; ok {
		return true
	}
	_, err := os.Stat(filepath.Join(c.dir, path))
	return err == nil
}

// controllerConversion serves hub's conversion in the controllers' tests,
// if the project has them: their control plane converts the CRD through
// the webhook, as a cluster does, so that a controller or a test that
// reads a version the CRD does not store gets every field.
func (c *changes) controllerConversion(p *Project, hub webhookData) {
	test := controllerDir + "/main_test.go"
	if !c.exists(test) {
		return
	}
	for _, v := range p.versions(hub.Group, hub.Kind) {
		s := hub.inVersion(v)
		c.insert(test, markerImports, s.Alias+" \""+s.ImportPath+"\"")
		c.insert(test, markerScheme, s.Alias+".AddToScheme(scheme),")
	}
	c.insert(test, markerImports, "webhook"+hub.Version+" \""+hub.Module+"/"+webhookDir+"/"+hub.Version+"\"")
	c.insert(test, markerConvertCRDs, "\""+hub.CRD+"\",")
	c.insert(test, markerConversions, "webhook"+hub.Version+".Setup"+hub.Kind+"Conversion(mgr),")
}

// e2eConversion has the end-to-end test's control plane convert d's CRD
// through the operator's webhook, if the project has that test.
func (c *changes) e2eConversion(d webhookData) {
	if c.exists(e2eMainTestFile) {
		c.insert(e2eMainTestFile, markerConvertCRDs, "\""+d.CRD+"\",")
	}
}

// crdPatch points d's CRD at the conversion webhook in config/crd, as
// kubebuilder's config/crd does, with a patch and the kustomize
// configuration that lets config/default rename the Service it names.
func (c *changes) crdPatch(d webhookData) {
	patch := "patches/webhook_in_" + d.Plural + ".yaml"
	c.createMissing("config/crd/"+patch, "webhook/config/crd_patch.yaml.tmpl", d)
	c.createMissing("config/crd/kustomizeconfig.yaml", "webhook/config/crd_kustomizeconfig.yaml.tmpl", d)
	k := string(c.current(crdKustomize))
	if !strings.Contains(k, markerCRDPatches) {
		k += "\n# The CRDs whose versions convert through the webhook; opkit create\n# webhook adds each at the marker.\npatches:\n" + markerCRDPatches + "\n\nconfigurations:\n- kustomizeconfig.yaml\n"
		c.out[crdKustomize] = []byte(k)
	}
	c.insert(crdKustomize, markerCRDPatches, "- path: "+patch)
}

// spokeFile holds a spoke's ConvertTo and ConvertFrom.
func spokeFile(version, lower string) string {
	return "api/" + version + "/" + lower + "_conversion.go"
}

// conversionTestFile holds the round trip test of a kind's conversion.
func conversionTestFile(hub, lower string) string {
	return path.Join(webhookDir, hub, lower+"_conversion_test.go")
}
