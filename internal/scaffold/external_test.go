package scaffold

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const certManagerPath = "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"

// certificate is what loadExternal learns of cert-manager's module.
func certificate() *externalType {
	return &externalType{
		module: "github.com/cert-manager/cert-manager@v1.21.2",
		kinds: []schema.GroupVersionKind{
			{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"},
			{Group: "cert-manager.io", Version: "v1", Kind: "Issuer"},
		},
		plural: "certificates", namespaced: true,
	}
}

// Each input that create webhook can check without the module is refused
// before anything runs, with what to give instead.
func TestCheckExternalRejects(t *testing.T) {
	p, err := LoadProject(newProject(t))
	if err != nil {
		t.Fatal(err)
	}
	p.APIs = append(p.APIs, API{Group: "ship", Version: "v1", Kind: "Frigate", Resource: true})
	valid := WebhookOptions{Group: "cert-manager.io", Version: "v1", Kind: "Certificate", Validation: true, ExternalAPIPath: certManagerPath}
	for name, tc := range map[string]struct {
		change func(*WebhookOptions)
		input  string
		says   string
	}{
		"conversion":         {func(o *WebhookOptions) { o.Conversion = true }, "--conversion", "leave out --conversion"},
		"built-in group":     {func(o *WebhookOptions) { o.Group = "apps" }, "--external-api-path", "leave out --external-api-path"},
		"group without dot":  {func(o *WebhookOptions) { o.Group = "certmanager" }, "--group", "--external-api-domain"},
		"project's group":    {func(o *WebhookOptions) { o.Group = "ship.example.com" }, "--group", "give --group ship"},
		"bad import path":    {func(o *WebhookOptions) { o.ExternalAPIPath = `github.com/x/y"; os.Exit(1) //` }, "--external-api-path", "import path"},
		"module not holding": {func(o *WebhookOptions) { o.ExternalAPIModule = "github.com/jetstack/cert-manager@v1.0.0" }, "--external-api-module", "cannot hold it"},
		"bad version":        {func(o *WebhookOptions) { o.ExternalAPIModule = "github.com/cert-manager/cert-manager@1.21" }, "--external-api-module", "semantic version"},
		"missing CRD file":   {func(o *WebhookOptions) { o.ExternalAPICRDs = "testdata/no-such.yaml" }, "--external-api-crds", "no such file"},
		"no hook":            {func(o *WebhookOptions) { o.Validation = false }, "--defaulting, --validation, --conversion", "at least one"},
	} {
		t.Run(name, func(t *testing.T) {
			o := valid
			tc.change(&o)
			err := o.checkExternal(p)
			var ie *InputError
			if !errors.As(err, &ie) || ie.Input != tc.input || !strings.Contains(ie.Allowed, tc.says) {
				t.Errorf("checkExternal = %v, want an InputError on %s that says %q", err, tc.input, tc.says)
			}
		})
	}
	if err := valid.checkExternal(p); err != nil {
		t.Errorf("checkExternal(valid) = %v", err)
	}
}

// kubebuilder's --external-api-domain follows --group; alone it is refused.
func TestJoinDomain(t *testing.T) {
	o := WebhookOptions{Group: "cert-manager", ExternalAPIDomain: "io", ExternalAPIPath: certManagerPath}
	if err := o.joinDomain(); err != nil || o.Group != "cert-manager.io" {
		t.Errorf("joinDomain = %v, group %q; want cert-manager.io", err, o.Group)
	}
	alone := WebhookOptions{Group: "cert-manager", ExternalAPIDomain: "io"}
	var ie *InputError
	if err := alone.joinDomain(); !errors.As(err, &ie) || ie.Input != "--external-api-domain" {
		t.Errorf("joinDomain without --external-api-path = %v, want an InputError on --external-api-domain", err)
	}
}

// A kind the package does not register, or registers in another group or
// version, is refused naming what it has.
func TestResolveExternalRejects(t *testing.T) {
	p, err := LoadProject(newProject(t))
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		o     WebhookOptions
		input string
		says  string
	}{
		"unknown kind":  {WebhookOptions{Group: "cert-manager.io", Version: "v1", Kind: "Certificat"}, "--kind", "has Certificate, Issuer"},
		"wrong version": {WebhookOptions{Group: "cert-manager.io", Version: "v1beta1", Kind: "Certificate"}, "--group and --version", "use --group cert-manager.io --version v1"},
		"wrong group":   {WebhookOptions{Group: "certmanager.io", Version: "v1", Kind: "Certificate"}, "--group and --version", "use --group cert-manager.io --version v1"},
	} {
		t.Run(name, func(t *testing.T) {
			tc.o.ExternalAPIPath = certManagerPath
			_, err := tc.o.resolveExternal(p, certificate())
			var ie *InputError
			if !errors.As(err, &ie) || ie.Input != tc.input || !strings.Contains(ie.Allowed, tc.says) {
				t.Errorf("resolveExternal = %v, want an InputError on %s that says %q", err, tc.input, tc.says)
			}
		})
	}
}

// The CRD is found by group and kind among a directory's YAML files; its
// plural and scope are the kind's, and the fixture holds the fields the
// schema requires, spec optional or not, with values the schema allows.
func TestFindCRD(t *testing.T) {
	o := WebhookOptions{Group: "example.io", Version: "v1", Kind: "Widget"}
	ext := &externalType{module: "example.io/widgets@v1.0.0"}
	if err := ext.findCRD("testdata/external", o); err != nil {
		t.Fatal(err)
	}
	if ext.plural != "widgetry" || ext.namespaced || ext.crdSource != "widgets.yaml" {
		t.Errorf("plural %q, namespaced %v, source %q; want widgetry, false, widgets.yaml", ext.plural, ext.namespaced, ext.crdSource)
	}
	_, fixture, _ := strings.Cut(string(ext.fixture), "\nspec:")
	want := "\n  mode: Fast\n  ports:\n  - 1\n  ref:\n    name: example\n  replicas: 2\n"
	if diff := cmp.Diff(want, fixture); diff != "" {
		t.Errorf("fixture (-want +got):\n%s", diff)
	}

	for name, tc := range map[string]struct {
		o     WebhookOptions
		input string
		says  string
	}{
		"unserved version": {WebhookOptions{Group: "example.io", Version: "v1alpha1", Kind: "Widget"}, "--version", "serves v1 only"},
		"no CRD":           {WebhookOptions{Group: "example.io", Version: "v1", Kind: "Gadget"}, "--external-api-crds", "none of its 1 YAML files"},
	} {
		t.Run(name, func(t *testing.T) {
			err := (&externalType{}).findCRD("testdata/external", tc.o)
			var ie *InputError
			if !errors.As(err, &ie) || ie.Input != tc.input || !strings.Contains(ie.Allowed, tc.says) {
				t.Errorf("findCRD = %v, want an InputError on %s that says %q", err, tc.input, tc.says)
			}
		})
	}
}

// The files of a webhook on another module's kind: its package in the
// operator's scheme and the tests', its CRD installed by the tests only,
// the markers on its group and CRD's plural, the namespaces left out; and
// the replay that opkit upgrade merges with renders them the same.
func TestCreateWebhookExternal(t *testing.T) {
	dir := newProject(t)
	p, err := LoadProject(dir)
	if err != nil {
		t.Fatal(err)
	}
	o := WebhookOptions{Group: "cert-manager.io", Version: "v1", Kind: "Certificate", Defaulting: true, Validation: true, RequesterCheck: true, ExternalAPIPath: certManagerPath}
	ext := certificate()
	ext.plural = "certs"
	d, err := o.resolveExternal(p, ext)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := webhookFiles(dir, p, o, d)
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.write(dir); err != nil {
		t.Fatal(err)
	}
	for path, lines := range map[string][]string{
		"cmd/main.go": {`certmanagerv1 "` + certManagerPath + `"`, "certmanagerv1.AddToScheme(scheme),", "webhookv1.SetupCertificateWebhook(mgr)"},
		"internal/webhook/v1/main_test.go": {
			`CRDDirs: []string{"../../../config/crd/bases", "../../../config/crd/external"},`,
			"certmanagerv1.AddToScheme(scheme),", "webhookv1.SetupCertificateWebhook(mgr),",
		},
		"internal/webhook/v1/certificate_validator.go": {
			"groups=cert-manager.io,resources=certs,verbs=create;update,versions=v1,name=vcertificate-v1.example.com,",
			`"values":["kube-system","acme-operator-system"]`,
			`apierrors.NewInvalid(schema.GroupKind{Group: "cert-manager.io", Kind: "Certificate"}, obj.Name, errs)`,
			"Certificate is another project's kind",
		},
		"internal/webhook/v1/certificate_defaulter.go":      {"path=/mutate-cert-manager-io-v1-certificate,", "groups=cert-manager.io,resources=certs,"},
		"internal/webhook/v1/certificate_validator_test.go": {"Spec: newCertificate(t).Spec,", `APIGroups: []string{"cert-manager.io"}, Resources: []string{"certs"}`},
		"internal/webhook/v1/certificate_fixture_test.go":   {`os.ReadFile("testdata/certificate.yaml")`},
		"PROJECT": {"external: true\n  group: cert-manager.io\n  kind: Certificate\n  namespaced: true\n  path: " + certManagerPath + "\n  plural: certs\n"},
	} {
		got := readFile(t, dir, path)
		for _, l := range lines {
			if !strings.Contains(got, l) {
				t.Errorf("%s lacks %q:\n%s", path, l, got)
			}
		}
	}
	if got := readFile(t, dir, crdKustomize); strings.Contains(got, "external") {
		t.Errorf("%s, which config/default installs, names the external CRDs:\n%s", crdKustomize, got)
	}

	p, err = LoadProject(dir)
	if err != nil {
		t.Fatal(err)
	}
	replay, err := generate(templates, p, opkitRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"cmd/main.go", "internal/webhook/v1/main_test.go", "internal/webhook/v1/certificate_validator.go", "internal/webhook/v1/certificate_fixture_test.go"} {
		if diff := cmp.Diff(readFile(t, dir, path), string(replay[path])); diff != "" {
			t.Errorf("the replay renders %s otherwise (-created +replayed):\n%s", path, diff)
		}
	}

	// Another hook later needs no --external-api-path: PROJECT has it.
	again := WebhookOptions{Group: "cert-manager.io", Version: "v1", Kind: "Certificate", Defaulting: true}
	if _, err := again.resolve(p); !errors.Is(err, ErrWebhookExists) {
		t.Errorf("resolve of the same hook again = %v, want ErrWebhookExists", err)
	}
	other := WebhookOptions{Group: "cert-manager.io", Version: "v1", Kind: "Certificate", Validation: true, ExternalAPIPath: "example.com/fork/v1"}
	var ie *InputError
	if _, err := other.resolve(p); !errors.As(err, &ie) || ie.Input != "--external-api-path" {
		t.Errorf("resolve with another package = %v, want an InputError on --external-api-path", err)
	}
}
