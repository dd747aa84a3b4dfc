package scaffold

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// apiNext writes a create api's files into the project in dir, as addAPI
// does, and returns what create api prints then.
func apiNext(t *testing.T, dir string, o APIOptions) string {
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
	c := &changes{dir: dir, out: files{}}
	return nextAfterAPI(p, o, d, c.stored(d))
}

// webhookNext writes a create webhook's files into the project in dir, as
// addWebhook does, and returns what create webhook prints then.
func webhookNext(t *testing.T, dir string, o WebhookOptions) string {
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
	return nextAfterWebhook(p, o, d)
}

// projectPath is a file a message names.
var projectPath = regexp.MustCompile(`[\w./-]+\.(?:go|yaml)\b`)

// What create api and create webhook print through a kind's versions:
// a second version unserved until the command it names, which writes the
// files it lists; the conversion's files to edit; a third version's spoke.
// Every file a message names is in the project once its command ran.
func TestNextStepsOfASecondVersion(t *testing.T) {
	dir := newProject(t)
	type step struct {
		msg  string
		want []string
	}
	steps := []step{
		{
			msg:  apiNext(t, dir, APIOptions{Group: "ship", Version: "v1alpha1", Kind: "Frigate", Namespaced: true, Resource: true, Controller: true}),
			want: []string{"Added ship/v1alpha1 Frigate. Next: edit api/v1alpha1/frigate_types.go and internal/controller/frigate_controller.go, then make test."},
		},
		{
			msg: apiNext(t, dir, APIOptions{Group: "ship", Version: "v1", Kind: "Frigate", Namespaced: true, Resource: true}),
			want: []string{
				"Added ship/v1 Frigate, not served yet", "strategy None", "v1alpha1 stays the stored version",
				"go tool opkit create webhook --group ship --version v1 --kind Frigate --conversion\n",
				"api/v1alpha1/frigate_conversion.go (ConvertTo and ConvertFrom)", "internal/webhook/v1/frigate_conversion_test.go",
			},
		},
		{
			msg: webhookNext(t, dir, WebhookOptions{Group: "ship", Version: "v1", Kind: "Frigate", Conversion: true}),
			want: []string{
				"ship/v1 Frigate is the hub of the conversion between v1alpha1, v1",
				"ConvertTo and ConvertFrom in api/v1alpha1/frigate_conversion.go",
				"config/samples/ship_v1alpha1_frigate.yaml and config/samples/ship_v1_frigate.yaml",
			},
		},
		{
			msg:  apiNext(t, dir, APIOptions{Group: "ship", Version: "v2", Kind: "Frigate", Namespaced: true, Resource: true}),
			want: []string{"converts through the hub v1", "ConvertTo and ConvertFrom in api/v2/frigate_conversion.go", "config/samples/ship_v2_frigate.yaml"},
		},
		{
			msg:  webhookNext(t, dir, WebhookOptions{Group: "ship", Version: "v1", Kind: "Frigate", Defaulting: true, Validation: true}),
			want: []string{"Next: edit internal/webhook/v1/frigate_defaulter.go and internal/webhook/v1/frigate_validator.go, then make test."},
		},
	}
	for _, s := range steps {
		for _, w := range s.want {
			if !strings.Contains(s.msg, w) {
				t.Errorf("the message does not say %q:\n%s", w, s.msg)
			}
		}
		for _, p := range projectPath.FindAllString(s.msg, -1) {
			if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
				t.Errorf("the message names %s, which the project lacks:\n%s", p, s.msg)
			}
		}
	}
	// The third version is served and converts at once; the stored one
	// stays.
	for path, want := range map[string]string{
		"api/v2/frigate_conversion.go":        "func (src *Frigate) ConvertTo(",
		"api/v2/conversion.go":                "func copyJSONFields(",
		"api/v1alpha1/frigate_types.go":       storageMarker,
		"internal/webhook/v1/main_test.go":    "shipv2.AddToScheme(scheme),",
		"internal/controller/main_test.go":    "shipv2.AddToScheme(scheme),",
		"config/samples/ship_v2_frigate.yaml": "name: frigate-v2-sample",
	} {
		if got := readFile(t, dir, path); !strings.Contains(got, want) {
			t.Errorf("%s does not hold %q:\n%s", path, want, got)
		}
	}
	for _, v := range []string{"v1", "v2"} {
		if got := readFile(t, dir, typesFile(v, "frigate")); strings.Contains(got, "unservedversion") || strings.Contains(got, "storageversion") {
			t.Errorf("api/%s is not served, or stored:\n%s", v, got)
		}
	}
}
