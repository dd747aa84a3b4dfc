package scaffold

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// addAPI writes an API's files into the project in dir as create api
// renders them, without running its commands.
func addAPI(t *testing.T, dir string, o APIOptions) {
	t.Helper()
	p, err := LoadProject(dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := o.resolve(p)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := apiFiles(dir, p, o, d)
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.write(dir); err != nil {
		t.Fatal(err)
	}
}

// addWebhook writes a create webhook's files into the project in dir,
// without running its commands.
func addWebhook(t *testing.T, dir string, o WebhookOptions) {
	t.Helper()
	p, err := LoadProject(dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := o.resolve(p)
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
}

var frigateV1 = APIOptions{Group: "ship", Version: "v1", Kind: "Frigate", Namespaced: true, Resource: true, Controller: true}

func TestCreateWebhookRejects(t *testing.T) {
	good := WebhookOptions{Group: "ship", Version: "v1", Kind: "Frigate", Defaulting: true}
	tests := []struct {
		name    string
		change  func(*WebhookOptions)
		prepare func(t *testing.T, dir string)
		input   string
		is      error
		want    []string
	}{
		{name: "no hook", change: func(o *WebhookOptions) { o.Defaulting = false }, input: "--defaulting, --validation, --conversion", want: []string{"at least one"}},
		{name: "kind lower case", change: func(o *WebhookOptions) { o.Kind = "frigate" }, input: "--kind", want: []string{`"frigate"`}},
		{name: "version", change: func(o *WebhookOptions) { o.Version = "v0" }, input: "--version", want: []string{`"v0"`}},
		{name: "no such API", change: func(o *WebhookOptions) { o.Kind = "Admiral" }, input: "--kind", want: []string{"ship/v1 Admiral", "opkit create api --group ship --version v1 --kind Admiral"}},
		{name: "outside a project", prepare: func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, ProjectFile)) }, is: ErrNotProject},
		{
			name: "defaulting twice",
			prepare: func(t *testing.T, dir string) {
				addWebhook(t, dir, WebhookOptions{Group: "ship", Version: "v1", Kind: "Frigate", Defaulting: true})
			},
			change: func(o *WebhookOptions) { o.Validation = true },
			is:     ErrWebhookExists, want: []string{"--defaulting", "ship/v1 Frigate"},
		},
		{
			name:   "validator file there already",
			change: func(o *WebhookOptions) { o.Defaulting, o.Validation = false, true },
			prepare: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, "internal", "webhook", "v1", "frigate_validator.go"), "package v1\n")
			},
			is: ErrWebhookExists, want: []string{"internal/webhook/v1/frigate_validator.go"},
		},
		{
			name: "requester check without validation", change: func(o *WebhookOptions) { o.RequesterCheck = true },
			input: "--requester-check", want: []string{"add --validation"},
		},
		{
			name: "conversion with one version", change: func(o *WebhookOptions) { o.Defaulting, o.Conversion = false, true },
			input: "--conversion", want: []string{"two versions", "opkit create api --group ship --version <another> --kind Frigate"},
		},
		{
			name: "marker gone from main.go",
			prepare: func(t *testing.T, dir string) {
				replaceIn(t, filepath.Join(dir, "cmd", "main.go"), markerWebhooks, "")
			},
			want: []string{"cmd/main.go", markerWebhooks},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newProject(t)
			addAPI(t, dir, frigateV1)
			if tt.prepare != nil {
				tt.prepare(t, dir)
			}
			opts := good
			if tt.change != nil {
				tt.change(&opts)
			}
			before := tree(t, dir)
			err := CreateWebhook(t.Context(), dir, opts)
			checkError(t, err, tt.input, tt.is, tt.want)
			checkUnchanged(t, dir, before)
		})
	}
}

// TestCreateWebhookRollsBack makes make manifests fail for real after
// create webhook wrote its files: it must put the project back.
func TestCreateWebhookRollsBack(t *testing.T) {
	t.Setenv("GOFLAGS", "-mod=mod")
	dir := newProject(t)
	addAPI(t, dir, frigateV1)
	if err := os.Remove(filepath.Join(dir, "Makefile")); err != nil {
		t.Fatal(err)
	}
	before := tree(t, dir)
	err := CreateWebhook(t.Context(), dir, WebhookOptions{Group: "ship", Version: "v1", Kind: "Frigate", Defaulting: true, Validation: true})
	checkError(t, err, "", nil, []string{"make manifests", "left as it was"})
	checkUnchanged(t, dir, before)
}

// TestCreateWebhookComposes adds defaulting, then validation to one kind,
// then defaulting to another: each lands at its markers once, and the
// server's wiring is added once.
func TestCreateWebhookComposes(t *testing.T) {
	dir := newProject(t)
	addAPI(t, dir, frigateV1)
	addAPI(t, dir, APIOptions{Group: "ship", Version: "v1", Kind: "Admiral", Resource: true, Controller: true})
	for _, o := range []WebhookOptions{
		{Group: "ship", Version: "v1", Kind: "Frigate", Defaulting: true},
		{Group: "ship", Version: "v1", Kind: "Frigate", Validation: true},
		{Group: "ship", Version: "v1", Kind: "Admiral", Defaulting: true},
	} {
		addWebhook(t, dir, o)
	}
	read := func(path string) string {
		b, err := os.ReadFile(filepath.Join(dir, path))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for path, lines := range map[string][]string{
		"cmd/main.go": {
			`webhookv1 "example.com/acme-operator/internal/webhook/v1"`, "webhookFlags", "f.webhook.register(fs)",
			"Webhook: f.webhookOptions(local),", "startCertificates(ctx, cfg, mgr, f, log)",
			"webhookv1.SetupFrigateWebhook(mgr)", "webhookv1.SetupAdmiralWebhook(mgr)",
		},
		"cmd/main_test.go":                       {"want.webhook = webhookDefaults()"},
		"cmd/webhook.go":                         {`"acme-operator-mutating-webhook-configuration"`, `"acme-operator-validating-webhook-configuration"`},
		"internal/webhook/v1/frigate_webhook.go": {"Defaulter: FrigateDefaulter{},", "Validator: FrigateValidator{},"},
		"internal/webhook/v1/admiral_webhook.go": {"Defaulter: AdmiralDefaulter{},"},
		"internal/webhook/v1/frigate_defaulter.go": {
			"+kubebuilder:webhook:path=/mutate-ship-example-com-v1-frigate,mutating=true,", "resources=frigates,",
		},
		"internal/webhook/v1/frigate_validator.go":      {"+kubebuilder:webhook:path=/validate-ship-example-com-v1-frigate,mutating=false,"},
		"internal/webhook/v1/main_test.go":              {`shipv1 "example.com/acme-operator/api/v1"`, "shipv1.AddToScheme(scheme),"},
		"internal/webhook/v1/admiral_defaulter_test.go": {`GenerateName: "defaulted-"`},
		"config/default/kustomization.yaml":             {"- ../webhook", "path: manager_webhook_patch.yaml"},
		"config/webhook/kustomization.yaml":             {"- manifests.yaml", "- service.yaml"},
		"config/rbac/kustomization.yaml":                {"- webhook_certs_role.yaml", "- webhook_certs_role_binding.yaml"},
		"config/rbac/webhook_certs_role.yaml":           {"- acme-operator-mutating-webhook-configuration", "- acme-operator-validating-webhook-configuration"},
		"PROJECT":                                       {"defaulting: true\n    validation: true"},
	} {
		got := read(path)
		for _, l := range lines {
			if n := strings.Count(got, l); n != 1 {
				t.Errorf("%s holds %q %d times, want once:\n%s", path, l, n, got)
			}
		}
	}
	if got := read("internal/webhook/v1/admiral_webhook.go"); strings.Contains(got, "Validator:") {
		t.Errorf("Admiral has no validator, but its webhook registers one:\n%s", got)
	}
}

// A project without webhooks serves none: opkit init's files leave the
// webhook server out until create webhook adds it.
func TestInitHasNoWebhookServer(t *testing.T) {
	dir := newProject(t)
	b, err := os.ReadFile(filepath.Join(dir, "config", "default", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "../webhook") {
		t.Errorf("config/default of a new project names a webhook:\n%s", b)
	}
	if _, err := os.Stat(filepath.Join(dir, cmdWebhookFile)); err == nil {
		t.Errorf("a new project has %s", cmdWebhookFile)
	}
}

// TestCreateWebhookConversion makes v1 the hub of a kind in v1 and
// v1alpha1, after v1 got a defaulter: v1alpha1, unserved since create api
// added it, is served, and the conversion is served by the operator, in
// both test packages and to make run's control plane.
func TestCreateWebhookConversion(t *testing.T) {
	dir := newProject(t)
	addAPI(t, dir, frigateV1)
	addWebhook(t, dir, WebhookOptions{Group: "ship", Version: "v1", Kind: "Frigate", Defaulting: true})
	addAPI(t, dir, APIOptions{Group: "ship", Version: "v1alpha1", Kind: "Frigate", Namespaced: true, Resource: true})
	if got := readFile(t, dir, "api/v1alpha1/frigate_types.go"); !strings.Contains(got, unservedBlock) {
		t.Errorf("before its conversion, the second version is served:\n%s", got)
	}
	addWebhook(t, dir, WebhookOptions{Group: "ship", Version: "v1", Kind: "Frigate", Conversion: true})
	for path, lines := range map[string][]string{
		"api/v1/frigate_conversion.go": {"func (*Frigate) Hub() {}"},
		"api/v1alpha1/frigate_conversion.go": {
			"func (src *Frigate) ConvertTo(", "func (dst *Frigate) ConvertFrom(", "dst, ok := dstRaw.(*shipv1.Frigate)",
			"convert Frigate v1alpha1 into v1: spec: %w", "convert Frigate v1 into v1alpha1: spec: %w",
		},
		"api/v1alpha1/conversion.go":                {"func copyJSONFields(dst, src any) error {"},
		"api/v1/frigate_types.go":                   {"// +kubebuilder:storageversion"},
		"config/samples/ship_v1alpha1_frigate.yaml": {"name: frigate-v1alpha1-sample"},
		"internal/webhook/v1/frigate_conversion.go": {"webhook.RegisterConversion(mgr, webhook.Conversion[*shipv1.Frigate]{})"},
		"internal/webhook/v1/frigate_conversion_test.go": {
			"func TestFrigateRoundTrip(t *testing.T) {", `roundTrip(t, newClient(t), "frigates.ship.example.com")`,
		},
		"internal/webhook/v1/roundtrip_test.go": {"func roundTrip(t *testing.T, cl client.Client, crd string) {"},
		"internal/webhook/v1/main_test.go": {
			`"frigates.ship.example.com",`, "shipv1alpha1.AddToScheme(scheme),", "shipv1.AddToScheme(scheme),",
			"webhookv1.SetupFrigateConversion(mgr),", "webhookv1.SetupFrigateWebhook(mgr),",
		},
		"internal/controller/main_test.go": {
			`shipv1 "example.com/acme-operator/api/v1"`, `shipv1alpha1 "example.com/acme-operator/api/v1alpha1"`,
			`webhookv1 "example.com/acme-operator/internal/webhook/v1"`,
			"shipv1alpha1.AddToScheme(scheme),", "shipv1.AddToScheme(scheme),",
			`"frigates.ship.example.com",`, "webhookv1.SetupFrigateConversion(mgr),",
		},
		"cmd/main.go":                                 {"webhookv1.SetupFrigateConversion(mgr)", "webhookv1.SetupFrigateWebhook(mgr)"},
		"cmd/webhook.go":                              {`t.CRDs = append(t.CRDs, "frigates.ship.example.com")`},
		"config/crd/kustomization.yaml":               {"- path: patches/webhook_in_frigates.yaml", "- kustomizeconfig.yaml", "- bases/ship.example.com_frigates.yaml"},
		"config/crd/patches/webhook_in_frigates.yaml": {"name: frigates.ship.example.com", "strategy: Webhook", "path: /convert"},
		"config/rbac/webhook_certs_role.yaml":         {"- frigates.ship.example.com", "- acme-operator-mutating-webhook-configuration"},
		"PROJECT":                                     {"conversion: true"},
	} {
		got := readFile(t, dir, path)
		for _, l := range lines {
			if n := strings.Count(got, l); n != 1 {
				t.Errorf("%s holds %q %d times, want once:\n%s", path, l, n, got)
			}
		}
	}
	if got := readFile(t, dir, "api/v1alpha1/frigate_types.go"); strings.Contains(got, "storageversion") || strings.Contains(got, "unservedversion") {
		t.Errorf("the second version is stored, or still not served:\n%s", got)
	}
}
