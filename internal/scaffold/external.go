package scaffold

import (
	"context"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// externalCRDDir holds the CRDs of other modules' kinds that the project
// has webhooks on. The tests install them in their control plane;
// config/default does not: the cluster has them, installed with the
// module's own project (cert-manager installs cert-manager's).
const externalCRDDir = "config/crd/external"

// newExternal reports whether o asks for webhooks on another module's kind
// that PROJECT does not record yet: one whose module create webhook must
// add, load and check. Group is the full group by then (joinDomain).
func (o *WebhookOptions) newExternal(p *Project) bool {
	if o.ExternalAPIPath == "" {
		return false
	}
	a, ok := p.find(o.Group, o.Version, o.Kind)
	return !ok || !a.External
}

// joinDomain makes Group the full group of --group G --external-api-domain
// D, as kubebuilder takes them.
func (o *WebhookOptions) joinDomain() error {
	if o.ExternalAPIDomain == "" {
		return nil
	}
	if o.ExternalAPIPath == "" {
		return &InputError{Input: "--external-api-domain", Value: o.ExternalAPIDomain, Allowed: "it goes with --external-api-path, for another module's kind; leave it out otherwise"}
	}
	o.Group += "." + o.ExternalAPIDomain
	return nil
}

// checkExternal checks, before anything runs, what can be checked of a
// create webhook on another module's kind without its module.
func (o *WebhookOptions) checkExternal(p *Project) error {
	if err := o.checkCommon(); err != nil {
		return err
	}
	gv := o.Group + "/" + o.Version + " " + o.Kind
	if o.Conversion {
		return &InputError{Input: "--conversion", Value: gv,
			Allowed: "the project does not own " + o.Kind + ": its CRD, and the conversion between its versions, are those of the project that makes it; leave out --conversion"}
	}
	if _, ok := builtinGroups[o.Group]; ok {
		return &InputError{Input: "--external-api-path", Value: o.ExternalAPIPath,
			Allowed: o.Group + " is a built-in group, whose types are k8s.io/api's: leave out --external-api-path"}
	}
	if err := validateSubdomain("--group", o.Group, "cert-manager.io"); err != nil {
		return err
	}
	if !strings.Contains(o.Group, ".") {
		return &InputError{Input: "--group", Value: o.Group,
			Allowed: "another module's kind is in a group with a domain, such as cert-manager.io: give the whole group (or its first part and --external-api-domain, as kubebuilder takes them)"}
	}
	for _, a := range p.APIs {
		if a.Resource && o.Group == a.Group+"."+p.Domain {
			return &InputError{Input: "--group", Value: o.Group, Allowed: "it is the project's own group " + a.Group + ": leave out --external-api-path, and give --group " + a.Group}
		}
	}
	if err := module.CheckImportPath(o.ExternalAPIPath); err != nil {
		return &InputError{Input: "--external-api-path", Value: o.ExternalAPIPath,
			Allowed: "it is the import path of the Go package that declares the kind, such as github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1 (" + err.Error() + ")"}
	}
	if o.ExternalAPIModule != "" {
		if err := checkModuleQuery(o.ExternalAPIModule, o.ExternalAPIPath); err != nil {
			return err
		}
	}
	if o.ExternalAPICRDs != "" {
		if _, err := os.Stat(o.ExternalAPICRDs); err != nil {
			return &InputError{Input: "--external-api-crds", Value: o.ExternalAPICRDs, Allowed: "a CRD file, or a directory of them, that holds the kind's CRD (" + err.Error() + ")"}
		}
	}
	return nil
}

// checkModuleQuery checks --external-api-module: module or module@version,
// a module that holds the package at pkg.
func checkModuleQuery(q, pkg string) error {
	mod, version, hasVersion := strings.Cut(q, "@")
	allowed := "module@version or module, such as github.com/cert-manager/cert-manager@v1.21.2: the module that holds " + pkg
	if err := module.CheckPath(mod); err != nil {
		return &InputError{Input: "--external-api-module", Value: q, Allowed: allowed + " (" + err.Error() + ")"}
	}
	if hasVersion && version != "latest" && !semver.IsValid(version) {
		return &InputError{Input: "--external-api-module", Value: q, Allowed: allowed + " (the version is a semantic version such as v1.21.2, or latest)"}
	}
	if pkg != mod && !strings.HasPrefix(pkg, mod+"/") {
		return &InputError{Input: "--external-api-module", Value: q, Allowed: allowed + ": " + mod + " cannot hold it, for " + pkg + " does not start with " + mod}
	}
	return nil
}

// createExternalWebhook is CreateWebhook on a kind of another module that
// the project has no webhook on yet: it requires the module, checks its
// package and finds its CRD, all inside the transaction, so that a failure
// leaves go.mod as it was too.
func createExternalWebhook(ctx context.Context, dir string, p *Project, opts WebhookOptions) error {
	if err := opts.checkExternal(p); err != nil {
		return err
	}
	if err := checkBaseVersion(dir, "create webhook"); err != nil {
		return err
	}
	var d webhookData
	err := transact(dir, func() error {
		fmt.Fprintf(opts.Progress, "Adding the module of %s to go.mod and loading it...\n", opts.ExternalAPIPath)
		ext, err := loadExternal(ctx, dir, opts)
		if err != nil {
			return err
		}
		if d, err = opts.resolveExternal(p, ext); err != nil {
			return err
		}
		fs, err := webhookFiles(dir, p, opts, d)
		if err == nil {
			err = updateBase(dir, fs, p)
		}
		if err != nil {
			return err
		}
		fs[externalCRDFile(d)] = ext.crdFile(d)
		fs[fixtureDataFile(d)] = ext.fixture
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

// resolveExternal checks o's group, version and kind against what the
// package registers, and derives the names the templates use.
func (o *WebhookOptions) resolveExternal(p *Project, ext *externalType) (webhookData, error) {
	var kinds []string
	for _, gvk := range ext.kinds {
		if gvk.Kind != o.Kind {
			kinds = append(kinds, gvk.Kind)
			continue
		}
		if gvk.Group != o.Group || gvk.Version != o.Version {
			return webhookData{}, &InputError{Input: "--group and --version", Value: o.Group + "/" + o.Version,
				Allowed: o.ExternalAPIPath + " registers " + o.Kind + " in " + gvk.Group + "/" + gvk.Version + " (its AddToScheme): use --group " + gvk.Group + " --version " + gvk.Version}
		}
		a := API{Group: o.Group, Version: o.Version, Kind: o.Kind, Namespaced: ext.namespaced, External: true, Path: o.ExternalAPIPath, Plural: ext.plural}
		if err := checkKindClash(p, a); err != nil {
			return webhookData{}, err
		}
		d := externalData(p, a)
		d.RequesterCheck = o.RequesterCheck
		return d, nil
	}
	slices.Sort(kinds)
	return webhookData{}, &InputError{Input: "--kind", Value: o.Kind,
		Allowed: o.ExternalAPIPath + " registers no kind " + o.Kind + "; it has " + strings.Join(slices.Compact(kinds), ", ")}
}

// checkKindClash refuses a kind that the project has in a's version in
// another group: both kinds' webhooks would be the same function.
func checkKindClash(p *Project, a API) error {
	for _, b := range p.APIs {
		if b.Version == a.Version && b.Kind == a.Kind && b.Group != a.Group && (b.Resource || b.Webhooks != nil) {
			return &InputError{Input: "--kind", Value: a.Group + "/" + a.Version + " " + a.Kind,
				Allowed: fmt.Sprintf("the project has %s/%s %s too, and the webhooks of both would be %s's Setup%sWebhook: remove one, or rename the project's kind", b.Group, b.Version, b.Kind, webhookDir+"/"+a.Version, a.Kind)}
		}
	}
	return nil
}

// externalData derives the names the webhook templates use for a, another
// module's kind, from what PROJECT records of it.
func externalData(p *Project, a API) webhookData {
	ad := newAPIData(p, &APIOptions{Group: a.Group, Version: a.Version, Kind: a.Kind, Namespaced: a.Namespaced})
	if a.Plural != "" {
		ad.Plural = a.Plural
	}
	ad.FullGroup, ad.RBACGroup = a.Group, a.Group
	ad.GroupVersion = a.Group + "/" + a.Version
	ad.ImportPath = a.Path
	ad.Alias = externalAlias(p, a)
	ad.Fixture = "\nSpec: new" + a.Kind + "(t).Spec,"
	slug := strings.ReplaceAll(ad.FullGroup, ".", "-") + "-" + ad.Version + "-" + ad.Lower
	return webhookData{
		apiData: ad, Name: p.Name,
		MutatePath: "/mutate-" + slug, ValidatePath: "/validate-" + slug,
		Foreign: true, External: true, Qualifier: p.Domain,
	}
}

// externalAlias names a's package in the files that import it: its
// directory's parent and version, as certmanagerv1, unless a package of
// the project's takes that name.
func externalAlias(p *Project, a API) string {
	base := path.Base(a.Path)
	if base == a.Version {
		base = path.Base(path.Dir(a.Path))
	}
	alias := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, strings.ToLower(base)) + a.Version
	taken := []string{"webhook" + a.Version}
	for _, b := range p.APIs {
		if b.Resource {
			taken = append(taken, strings.ReplaceAll(strings.Split(b.Group, ".")[0], "-", "")+b.Version)
		}
	}
	if slices.Contains(taken, alias) || alias[0] >= '0' && alias[0] <= '9' {
		alias = "ext" + alias
	}
	return alias
}

// externalCRDFile is where the project keeps d's CRD.
func externalCRDFile(d webhookData) string {
	return externalCRDDir + "/" + d.FullGroup + "_" + d.Plural + ".yaml"
}

// fixtureDataFile holds the fields of d's kind that the CRD's schema
// requires, which the webhook tests' objects start from.
func fixtureDataFile(d webhookData) string {
	return path.Join(webhookDir, d.Version, "testdata", d.Lower+".yaml")
}

// external adds what a webhook on another module's kind needs besides the
// webhook: its type in the operator's scheme (the webhook decodes it), and
// in the tests its CRD and the object the tests start from.
func (c *changes) external(d webhookData) {
	c.insert(mainFile, markerImports, d.Alias+" \""+d.ImportPath+"\"")
	c.insert(mainFile, markerScheme, d.Alias+".AddToScheme(scheme),")
	pkg := path.Join(webhookDir, d.Version)
	c.createMissing(pkg+"/"+d.Lower+"_fixture_test.go", "webhook/fixture_test.go.tmpl", d)
	test := pkg + "/main_test.go"
	b := string(c.current(test))
	const bases, external = `"../../../config/crd/bases"`, `"../../../config/crd/external"`
	if c.err != nil || strings.Contains(b, external) {
		return
	}
	if !strings.Contains(b, bases) {
		c.fail(fmt.Errorf("create webhook: %s has no %s in its CRDDirs, after which opkit adds %s (the CRD of %s); add both yourself", test, bases, external, d.Kind))
		return
	}
	c.out[test] = []byte(strings.Replace(b, bases, bases+", "+external, 1))
}

// externalNote is what create webhook says of another module's kind: that
// the cluster must have its CRD.
func externalNote(p *Project, d webhookData) string {
	return fmt.Sprintf("%s is %s's kind: its CRD is in %s for the tests, and config/default does not install it; the cluster must have it (installed with %s). Its webhooks see every namespace but kube-system and %s-system (the markers' namespaceSelector). The tests create %s from %s: the fields its CRD requires, with placeholder values; edit them to the object your webhooks expect.\n",
		d.Kind, d.ImportPath, externalCRDFile(d), d.FullGroup, p.Name, d.KindPlural, fixtureDataFile(d))
}
