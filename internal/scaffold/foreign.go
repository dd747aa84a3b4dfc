package scaffold

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/opkit-dev/opkit/internal/planebin"
)

// resolveForeign checks a create webhook for a type the project does not
// own: a built-in kind, served by the API server, whose Go type is in
// k8s.io/api. a is the project's API of that group, version and kind (a
// controller create api --resource=false made), if it has one.
func (o *WebhookOptions) resolveForeign(p *Project) (webhookData, error) {
	gv := o.Group + "/" + o.Version + " " + o.Kind
	if a, ok := p.find(o.Group, o.Version, o.Kind); ok && a.External {
		return o.resolveRecorded(p, a)
	}
	pkg, builtin := builtinGroups[o.Group]
	if !builtin {
		return webhookData{}, notOwned(p, o.Group, o.Version, o.Kind)
	}
	if o.Group == "" {
		o.Group = "core" // as create api records it
	}
	fullGroup := o.Group
	if pkg == "core" {
		fullGroup = ""
	}
	if err := servesKind(p, schema.GroupVersionKind{Group: fullGroup, Version: o.Version, Kind: o.Kind}, o.Group); err != nil {
		return webhookData{}, err
	}
	if o.Conversion {
		return webhookData{}, &InputError{Input: "--conversion", Value: gv,
			Allowed: "the project does not own " + o.Kind + ": the API server that serves it converts its versions, and opkit makes no CRD for it; leave out --conversion (create webhook --conversion is for the project's own kinds in two versions or more)"}
	}
	for _, b := range p.APIs {
		if b.Version == o.Version && b.Kind == o.Kind && b.Group != o.Group && (b.Resource || b.Webhooks != nil) {
			return webhookData{}, &InputError{Input: "--kind", Value: gv,
				Allowed: fmt.Sprintf("the project has %s/%s %s too, and the webhooks of both would be %s's Setup%sWebhook: remove one, or rename the project's kind", b.Group, b.Version, b.Kind, webhookDir+"/"+o.Version, o.Kind)}
		}
	}
	a, ok := p.find(o.Group, o.Version, o.Kind)
	if !ok {
		a = API{Group: o.Group, Version: o.Version, Kind: o.Kind, Namespaced: !slices.Contains(clusterScoped, o.Kind)}
	}
	if err := o.checkNew(a.Webhooks); err != nil {
		return webhookData{}, err
	}
	d, err := webhookDataOf(p, a)
	d.RequesterCheck = o.RequesterCheck
	return d, err
}

// resolveRecorded checks a create webhook on another module's kind that
// PROJECT records already: another hook.
func (o *WebhookOptions) resolveRecorded(p *Project, a API) (webhookData, error) {
	if o.ExternalAPIPath != "" && o.ExternalAPIPath != a.Path {
		return webhookData{}, &InputError{Input: "--external-api-path", Value: o.ExternalAPIPath,
			Allowed: "the project has " + a.Group + "/" + a.Version + " " + a.Kind + " from " + a.Path + " (see PROJECT): leave out --external-api-path, or give that one"}
	}
	if o.Conversion {
		return webhookData{}, &InputError{Input: "--conversion", Value: a.Group + "/" + a.Version + " " + a.Kind,
			Allowed: "the project does not own " + a.Kind + ": its CRD, and the conversion between its versions, are those of the project that makes it; leave out --conversion"}
	}
	if err := o.checkNew(a.Webhooks); err != nil {
		return webhookData{}, err
	}
	d := externalData(p, a)
	d.RequesterCheck = o.RequesterCheck
	return d, nil
}

// foreignData derives the names the webhook templates use for a, a
// built-in type the project does not own.
func foreignData(p *Project, a API) (webhookData, error) {
	if a.External {
		return externalData(p, a), nil
	}
	ao := APIOptions{Group: a.Group, Version: a.Version, Kind: a.Kind, Namespaced: a.Namespaced}
	ad := newAPIData(p, &ao)
	if err := ao.resolveBuiltin(&ad); err != nil {
		return webhookData{}, err
	}
	slug := strings.ReplaceAll(ad.FullGroup, ".", "-") + "-" + ad.Version + "-" + ad.Lower
	return webhookData{
		apiData: ad, Name: p.Name,
		MutatePath: "/mutate-" + slug, ValidatePath: "/validate-" + slug,
		Foreign: true, Qualifier: p.Domain, GroupVersionVar: "SchemeGroupVersion",
	}, nil
}

// servesKind checks that the API server's built-in group version gvk
// serves gvk's kind as an object of its own, and otherwise says where the
// kind is. group is the group as the user gave it.
func servesKind(p *Project, gvk schema.GroupVersionKind, group string) error {
	if isObjectKind(gvk) {
		return nil
	}
	given := group + "/" + gvk.Version + " " + gvk.Kind
	where := kindHomes(p, gvk.Kind)
	if len(where) == 0 {
		return &InputError{Input: "--kind", Value: given,
			Allowed: "neither the project nor a built-in API has a kind " + gvk.Kind + " (kubectl api-resources lists those a cluster serves); check its spelling, or for a type of your own run opkit create api first"}
	}
	return &InputError{Input: "--group and --version", Value: given,
		Allowed: group + "/" + gvk.Version + " does not serve " + gvk.Kind + ": use " + strings.Join(where, ", or ")}
}

// kindHomes are the groups and versions that have kind, as flags: the
// project's own (of PROJECT), then the built-in ones, sorted.
func kindHomes(p *Project, kind string) []string {
	var own, builtin []string
	for _, a := range p.APIs {
		if a.Resource && a.Kind == kind {
			own = append(own, "--group "+a.Group+" --version "+a.Version+" (the project's own)")
		}
	}
	for known := range clientgoscheme.Scheme.AllKnownTypes() {
		if known.Kind == kind && isObjectKind(known) {
			g := known.Group
			if g == "" {
				g = "core"
			}
			builtin = append(builtin, "--group "+g+" --version "+known.Version)
		}
	}
	slices.Sort(builtin)
	return append(own, builtin...)
}

// isObjectKind reports whether the built-in scheme has gvk as an object
// that the API server stores, such as Deployment, and not as a list or a
// request option (DeploymentList, ListOptions).
func isObjectKind(gvk schema.GroupVersionKind) bool {
	if strings.HasSuffix(gvk.Kind, "List") || !clientgoscheme.Scheme.Recognizes(gvk) {
		return false
	}
	obj, err := clientgoscheme.Scheme.New(gvk)
	if err != nil {
		return false
	}
	if _, ok := obj.(metav1.Object); !ok {
		return false
	}
	return !removed(obj)
}

// removed reports whether Kubernetes stopped serving obj's version by the
// release of the control plane opkit's tests run (planebin.DefaultVersion):
// k8s.io/api keeps apps/v1beta1's Deployment, which no API server since
// 1.16 serves.
func removed(obj any) bool {
	l, ok := obj.(interface{ APILifecycleRemoved() (major, minor int) })
	if !ok {
		return false
	}
	major, minor := l.APILifecycleRemoved()
	var servedMajor, servedMinor int
	if _, err := fmt.Sscanf(planebin.DefaultVersion, "%d.%d", &servedMajor, &servedMinor); err != nil {
		return false
	}
	return major < servedMajor || major == servedMajor && minor <= servedMinor
}

// notOwned is the error of create webhook for group, version and kind that
// are neither the project's own nor built in: it says where the kind is.
func notOwned(p *Project, group, version, kind string) error {
	for _, a := range p.APIs {
		if a.Resource && group == a.Group+"."+p.Domain {
			return &InputError{Input: "--group", Value: group,
				Allowed: "it is the project's own group " + a.Group + ": give it as create api took it, --group " + a.Group}
		}
	}
	allowed := "the project has no such API type of its own (see PROJECT): run opkit create api --group " + group + " --version " + version + " --kind " + kind + " first"
	if strings.Contains(group, ".") {
		allowed = group + " is neither one of the project's groups nor a built-in one: for another module's custom resource (such as cert-manager's), give the Go package of its type with --external-api-path (see docs/webhooks.md in opkit); for a kind of your own, run opkit create api with its group's first part, such as --group ship"
	}
	if where := kindHomes(p, kind); len(where) > 0 {
		allowed += "; or, for the " + kind + " there is, " + strings.Join(where, ", or ")
	}
	return &InputError{Input: "--kind", Value: group + "/" + version + " " + kind, Allowed: allowed}
}

// ScopeNote is what the comment above a built-in kind's webhook marker
// adds: why the webhook leaves some namespaces out. Empty for the
// project's own kinds, whose objects only the project's users write.
func (d webhookData) ScopeNote() string {
	if !d.Foreign {
		return ""
	}
	what := "a built-in kind"
	if d.External {
		what = "another project's kind, installed cluster-wide,"
	}
	return "\n//\n// " + d.Kind + ` is ` + what + ` so the webhook would see the whole
// cluster's: it leaves out kube-system and the operator's own namespace,
// ` + d.Name + `-system (the patch's namespaceSelector: change it if
// config/default puts the operator elsewhere). With failurePolicy=fail, a
// webhook that saw them would refuse the writes that start the cluster and
// the operator itself while no replica serves.`
}

// MarkerPatch is what a built-in kind's webhook marker ends with: the
// namespaceSelector of ScopeNote.
func (d webhookData) MarkerPatch() string {
	if !d.Foreign {
		return ""
	}
	return ",patch=`" + `{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","` + d.Name + `-system"]}]}}` + "`"
}
