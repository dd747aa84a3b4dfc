package scaffold

import (
	"fmt"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// kbProject is what the converter takes from a kubebuilder PROJECT file
// (config version 3, as kubebuilder 4 writes it).
type kbProject struct {
	Domain, Repo, Name string
	Multigroup         bool
	Namespaced         bool // the manager watches its own namespace only
	Resources          []kbResource
}

// kbResource is one entry of PROJECT's resources.
type kbResource struct {
	Line                 int
	Group, Version, Kind string
	Domain, Path, Plural string
	Module               string // an external API's module@version
	Core, External       bool
	API                  bool // kubebuilder create api made its types
	Namespaced           bool
	Controllers          []string // controller names; "" for the kind's default one
	Webhooks             *kbWebhooks
}

// kbWebhooks are a resource's webhooks as PROJECT records them.
type kbWebhooks struct {
	Line                               int // of PROJECT's webhooks key
	Defaulting, Validation, Conversion bool
	DefaultingPath, ValidationPath     string
	Spokes                             []string
}

// knownPlugins say what becomes of each kubebuilder plugin's part of a
// project; a plugin not listed is reported.
var knownPlugins = map[string]string{
	"go.kubebuilder.io/v4":               "the Go layout: api/, internal/controller and internal/webhook are kept and wired through opkit's manager in cmd/main.go",
	"go.kubebuilder.io/v3":               "kubebuilder 3's Go layout: api/, controllers/ and main.go are kept, and main.go is wired through opkit's manager",
	"kustomize.common.kubebuilder.io/v2": "config/ is kept as it is: the manager's flags keep their names, so its Deployment's args still apply",
	"deploy-image.go.kubebuilder.io/v1-alpha": "the code it generated (the controllers that run each image, and the image and command in config/manager) is kept as code; " +
		"opkit does not generate it again",
	"grafana.kubebuilder.io/v1-alpha": "grafana/ is kept as it is: every metric its dashboards read (controller_runtime_*, workqueue_*, process_*) " +
		"opkit's manager exports under the same name (docs/metrics.md); grafana/custom-metrics/config.yaml is yours, as it was",
	"helm.kubebuilder.io/v1-alpha":          "the chart is kept as it is and no longer rendered again: opkit has no Helm plugin; its values still reach the same flags",
	"helm.kubebuilder.io/v2-alpha":          "the chart is kept as it is and no longer rendered again: opkit has no Helm plugin; its values still reach the same flags",
	"manifests.sdk.operatorframework.io/v2": "bundle/ and config/manifests (operator-sdk's OLM bundle) are kept: the Deployment they describe keeps its args, which the port's flags keep",
	"scorecard.sdk.operatorframework.io/v2": "config/scorecard (operator-sdk's scorecard tests) is kept as it is",
	"autoupdate.kubebuilder.io/v1-alpha": "its workflow runs kubebuilder alpha update, which would scaffold controller-runtime's main again over opkit's: " +
		"remove .github/workflows/auto_update.yml",
}

// parseKubebuilderProject reads a kubebuilder PROJECT and accounts for
// every field in rep: mapped, or reported with its line.
func parseKubebuilderProject(data []byte, rep *portReport) (*kbProject, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("PROJECT is not YAML: %w", err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("PROJECT is not a kubebuilder project file: its top level is not a mapping")
	}
	p := &kbProject{}
	top := doc.Content[0]
	version := ""
	for k, v := range pairs(top) {
		if k.Value == "version" {
			version = v.Value
		}
	}
	if version != "3" {
		return nil, fmt.Errorf("PROJECT has version %q: opkit init --from-kubebuilder reads version \"3\", which kubebuilder 3 and 4 write; upgrade the project with kubebuilder first (kubebuilder alpha generate)", version)
	}
	const f = ProjectFile
	for k, v := range pairs(top) {
		line := k.Line
		switch k.Value {
		case "version":
			rep.mapped(f, line, "version", "3, read")
		case "cliVersion":
			rep.mapped(f, line, "cliVersion", fmt.Sprintf("kubebuilder %s made the project; kept for the record", v.Value))
		case "domain":
			p.Domain = v.Value
			rep.mapped(f, line, "domain", "the API groups keep their domain "+v.Value)
		case "repo":
			p.Repo = v.Value
			rep.mapped(f, line, "repo", "the Go module "+v.Value+", kept")
		case "projectName":
			p.Name = v.Value
			rep.mapped(f, line, "projectName", "the operator's name "+v.Value+": its leader election ID and config/ are kept")
		case "multigroup":
			p.Multigroup = v.Value == "true"
			rep.mapped(f, line, "multigroup", "the api/<group>/<version> layout is kept; imports are resolved as they are")
		case "namespaced":
			p.Namespaced = v.Value == "true"
			rep.mapped(f, line, "namespaced", "the manager watches the namespaces cmd/main.go gave controller-runtime's cache (see its entry)")
		case "layout":
			for _, l := range v.Content {
				if how, ok := knownPlugins[l.Value]; ok {
					rep.mapped(f, l.Line, "layout "+l.Value, how)
				} else {
					rep.needs(f, l.Line, "layout "+l.Value, "a plugin opkit does not know: check what it generated and port it by hand")
				}
			}
		case "plugins":
			for name, cfg := range pairs(v) {
				how, ok := knownPlugins[name.Value]
				if !ok {
					rep.needs(f, name.Line, "plugin "+name.Value, "a plugin opkit does not know: check what it generated and port it by hand")
					continue
				}
				if strings.HasPrefix(name.Value, "autoupdate.") || strings.HasPrefix(name.Value, "helm.") {
					rep.needs(f, name.Line, "plugin "+name.Value, how)
				} else {
					rep.mapped(f, name.Line, "plugin "+name.Value, how)
				}
				pluginResources(name.Value, cfg, rep)
			}
		case "componentConfig":
			if v.Value == "true" {
				rep.needs(f, line, "componentConfig", "a ControllerManagerConfig file: opkit's manager takes its options in cmd/main.go; move what the file sets there (kubebuilder 4 dropped component config too)")
			} else {
				rep.mapped(f, line, "componentConfig", "false: nothing to port")
			}
		case "resources":
			for i, r := range v.Content {
				res, err := parseResource(i, r, rep)
				if err != nil {
					return nil, err
				}
				p.Resources = append(p.Resources, res)
			}
		default:
			rep.needs(f, line, k.Value, "a PROJECT field opkit does not know: check what it means for the project and port it by hand")
		}
	}
	if p.Repo == "" {
		return nil, fmt.Errorf("PROJECT has no repo: the project's Go module path, which the converter needs to find its packages")
	}
	return p, nil
}

// pluginResources accounts for a plugin's own list of resources, such as
// deploy-image's options.
func pluginResources(plugin string, cfg *yaml.Node, rep *portReport) {
	for k, v := range pairs(cfg) {
		if k.Value != "resources" {
			rep.mapped(ProjectFile, k.Line, "plugin "+plugin+" "+k.Value, "kept with the plugin's files")
			continue
		}
		for _, r := range v.Content {
			kind := ""
			for rk, rv := range pairs(r) {
				if rk.Value == "kind" {
					kind = rv.Value
				}
			}
			eachField(r, "", func(key string, line int) {
				rep.mapped(ProjectFile, line, "plugin "+plugin+" resource "+kind+" "+key, "in the code and config/ the plugin wrote, which are kept")
			})
		}
	}
}

// eachField calls fn with the path and line of every field under n.
func eachField(n *yaml.Node, prefix string, fn func(key string, line int)) {
	for k, v := range pairs(n) {
		fn(prefix+k.Value, k.Line)
		eachField(v, prefix+k.Value+".", fn)
	}
}

// parseResource reads resources[i].
func parseResource(i int, n *yaml.Node, rep *portReport) (kbResource, error) {
	const f = ProjectFile
	r := kbResource{Line: n.Line}
	if n.Kind != yaml.MappingNode {
		return r, fmt.Errorf("PROJECT resources[%d] (line %d) is not a mapping", i, n.Line)
	}
	for k, v := range pairs(n) {
		switch k.Value {
		case "group":
			r.Group = v.Value
		case "version":
			r.Version = v.Value
		case "kind":
			r.Kind = v.Value
		}
	}
	if r.Kind == "" || r.Version == "" {
		return r, fmt.Errorf("PROJECT resources[%d] (line %d) has no kind or version", i, n.Line)
	}
	name := fmt.Sprintf("resources[%d] %s/%s %s", i, r.Group, r.Version, r.Kind)
	for k, v := range pairs(n) {
		line := k.Line
		switch k.Value {
		case "group", "version", "kind":
			rep.mapped(f, line, name+" "+k.Value, v.Value+", kept")
		case "domain":
			r.Domain = v.Value
			rep.mapped(f, line, name+" domain", v.Value+", kept")
		case "path":
			r.Path = v.Value
			rep.mapped(f, line, name+" path", "the Go package "+v.Value+", kept")
		case "plural":
			r.Plural = v.Value
			rep.mapped(f, line, name+" plural", v.Value+": the CRD and RBAC markers keep it")
		case "module":
			r.Module = v.Value
			rep.mapped(f, line, name+" module", v.Value+": go.mod keeps requiring it")
		case "core":
			r.Core = v.Value == "true"
			rep.mapped(f, line, name+" core", "a built-in kind, from k8s.io/api")
		case "external":
			r.External = v.Value == "true"
			rep.mapped(f, line, name+" external", "another module's kind: its scheme registration in cmd/main.go is kept")
		case "controller":
			if v.Value == "true" {
				r.Controllers = append(r.Controllers, "")
				rep.mapped(f, line, name+" controller", "its SetupWithManager becomes SetupWithOpkit (see its entry)")
			} else {
				rep.mapped(f, line, name+" controller", "false: no controller")
			}
		case "controllers":
			for _, c := range v.Content {
				cn := ""
				for ck, cv := range pairs(c) {
					if ck.Value == "name" {
						cn = cv.Value
					} else {
						rep.needs(f, ck.Line, name+" controllers "+ck.Value, "a controller field opkit does not know: port it by hand")
					}
				}
				r.Controllers = append(r.Controllers, cn)
				rep.mapped(f, c.Line, name+" controller "+strconv.Quote(cn), "its SetupWithManager becomes SetupWithOpkit (see its entry)")
			}
		case "api":
			r.API = true
			for ak, av := range pairs(v) {
				switch ak.Value {
				case "crdVersion":
					if av.Value == "v1" {
						rep.mapped(f, ak.Line, name+" api.crdVersion", "v1: config/crd is kept")
					} else {
						rep.needs(f, ak.Line, name+" api.crdVersion", av.Value+": only apiextensions.k8s.io/v1 CRDs are served by the API servers opkit tests against")
					}
				case "namespaced":
					r.Namespaced = av.Value == "true"
					rep.mapped(f, ak.Line, name+" api.namespaced", av.Value+": the CRD's scope, kept")
				case "ssa":
					rep.mapped(f, ak.Line, name+" api.ssa", "the generated apply configurations are kept; the controllers' Apply calls go through opkit's cached client")
				default:
					rep.needs(f, ak.Line, name+" api."+ak.Value, "an api field opkit does not know: port it by hand")
				}
			}
		case "webhooks":
			w := &kbWebhooks{Line: line}
			for wk, wv := range pairs(v) {
				switch wk.Value {
				case "defaulting":
					w.Defaulting = wv.Value == "true"
					rep.mapped(f, wk.Line, name+" webhooks.defaulting", "the defaulter is served by opkit's webhook server (see its setup's entry)")
				case "validation":
					w.Validation = wv.Value == "true"
					rep.mapped(f, wk.Line, name+" webhooks.validation", "the validator is served by opkit's webhook server (see its setup's entry)")
				case "conversion":
					w.Conversion = wv.Value == "true"
					rep.mapped(f, wk.Line, name+" webhooks.conversion", "the hub's conversion is served at /convert by webhook.RegisterConversion")
				case "defaultingPath":
					w.DefaultingPath = wv.Value
					rep.mapped(f, wk.Line, name+" webhooks.defaultingPath", wv.Value+": served at the same path (crport.Paths)")
				case "validationPath":
					w.ValidationPath = wv.Value
					rep.mapped(f, wk.Line, name+" webhooks.validationPath", wv.Value+": served at the same path (crport.Paths)")
				case "spoke":
					for _, s := range wv.Content {
						w.Spokes = append(w.Spokes, s.Value)
					}
					rep.mapped(f, wk.Line, name+" webhooks.spoke", strings.Join(w.Spokes, ", ")+": converted through the hub by their ConvertTo and ConvertFrom, as kubebuilder's are")
				case "webhookVersion":
					if wv.Value == "v1" {
						rep.mapped(f, wk.Line, name+" webhooks.webhookVersion", "v1: admission.k8s.io/v1 reviews")
					} else {
						rep.needs(f, wk.Line, name+" webhooks.webhookVersion", wv.Value+": opkit serves admission.k8s.io/v1 reviews only")
					}
				default:
					rep.needs(f, wk.Line, name+" webhooks."+wk.Value, "a webhook field opkit does not know: port it by hand")
				}
			}
			r.Webhooks = w
		default:
			rep.needs(f, line, name+" "+k.Value, "a resource field opkit does not know: port it by hand")
		}
	}
	return r, nil
}

// pairs yields a mapping node's keys and values.
func pairs(n *yaml.Node) func(func(*yaml.Node, *yaml.Node) bool) {
	return func(yield func(*yaml.Node, *yaml.Node) bool) {
		if n == nil || n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if !yield(n.Content[i], n.Content[i+1]) {
				return
			}
		}
	}
}
