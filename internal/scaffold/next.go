package scaffold

import (
	"fmt"
	"path"
	"strings"
)

// nextAfterAPI says what create api added and what to do next, naming the
// files to edit and the command to run. p is the project with the API;
// stored is the version of the kind that is stored, if it has several.
func nextAfterAPI(p *Project, o APIOptions, d apiData, stored string) string {
	var b strings.Builder
	if !o.Resource {
		fmt.Fprintf(&b, "Added a controller of %s/%s %s. Next: edit %s, then make test.\n", o.Group, o.Version, o.Kind, controllerFile(d))
		return b.String()
	}
	edit := []string{typesFile(d.Version, d.Lower)}
	if o.Controller {
		edit = append(edit, controllerFile(d))
	}
	switch {
	case len(d.otherVersions) == 0:
		fmt.Fprintf(&b, "Added %s/%s %s. Next: edit %s, then make test.\n", o.Group, o.Version, o.Kind, strings.Join(edit, " and "))
	case d.hub != "":
		fmt.Fprintf(&b, "Added %s/%s %s, which converts through the hub %s like the kind's other versions.\n", o.Group, o.Version, o.Kind, d.hub)
		fmt.Fprintf(&b, "Next: edit %s; convert the fields it names differently from %s in ConvertTo and ConvertFrom in %s; set every field in %s; then make test (%s round-trips the samples through every version).\n",
			strings.Join(edit, " and "), d.hub, spokeFile(d.Version, d.Lower), sampleFile(d), conversionTestFile(d.hub, d.Lower))
	default:
		hub := d.inVersion(d.Version)
		fmt.Fprintf(&b, "Added %s/%s %s, not served yet (+kubebuilder:unservedversion): until the versions convert through a webhook, the API server would convert them with strategy None, dropping every field they name differently. %s stays the stored version.\n",
			o.Group, o.Version, o.Kind, stored)
		fmt.Fprintf(&b, "Next: edit %s, then serve %s with\n  go tool opkit create webhook --group %s --version %s --kind %s --conversion\n", strings.Join(edit, " and "), o.Version, o.Group, o.Version, o.Kind)
		fmt.Fprintf(&b, "which makes %s the hub and writes %s.\n", o.Version, strings.Join(conversionFiles(p, hub), ", "))
	}
	if o.TenantScoped {
		fmt.Fprintf(&b, "%s acts as the ServiceAccount its spec names: %s pins who may name one, and %s holds the consent its sample acts under, which each namespace's owner grants likewise.\n",
			o.Kind, policyDir+"/"+d.Lower+"_service_account.yaml", tenancyFile(d))
	}
	return b.String()
}

// nextAfterWebhook says what create webhook added and what to do next. p
// is the project with the webhooks.
func nextAfterWebhook(p *Project, o WebhookOptions, d webhookData) string {
	var b strings.Builder
	pkg := path.Join(webhookDir, d.Version)
	var edit []string
	if o.Defaulting {
		edit = append(edit, pkg+"/"+d.Lower+"_defaulter.go")
	}
	if o.Validation {
		edit = append(edit, pkg+"/"+d.Lower+"_validator.go")
	}
	if len(edit) > 0 {
		fmt.Fprintf(&b, "Added webhooks for %s/%s %s. Next: edit %s, then make test.\n", o.Group, o.Version, o.Kind, strings.Join(edit, " and "))
	}
	if d.External {
		b.WriteString(externalNote(p, d))
	} else if d.Foreign {
		fmt.Fprintf(&b, "%s is a built-in kind: its webhooks see every namespace but kube-system and %s-system (the markers' namespaceSelector); change it there if the operator runs elsewhere.\n", o.Kind, p.Name)
	}
	if !o.Conversion {
		return b.String()
	}
	versions := p.versions(d.Group, d.Kind)
	var spokes, samples []string
	for _, v := range versions {
		if v != d.Version {
			spokes = append(spokes, spokeFile(v, d.Lower))
		}
		samples = append(samples, sampleFile(d.inVersion(v)))
	}
	fmt.Fprintf(&b, "%s/%s %s is the hub of the conversion between %s, all served; make run and the tests serve it too.\n", o.Group, o.Version, o.Kind, strings.Join(versions, ", "))
	fmt.Fprintf(&b, "Next: convert the fields the versions name differently in ConvertTo and ConvertFrom in %s; set every field in %s; then make test (%s round-trips the samples through every version).\n",
		strings.Join(spokes, " and "), strings.Join(samples, " and "), conversionTestFile(d.Version, d.Lower))
	return b.String()
}

// conversionFiles are the files create webhook --conversion writes, with
// hub the hub.
func conversionFiles(p *Project, hub apiData) []string {
	fs := []string{"api/" + hub.Version + "/" + hub.Lower + "_conversion.go (Hub)"}
	for _, v := range p.versions(hub.Group, hub.Kind) {
		if v != hub.Version {
			fs = append(fs, spokeFile(v, hub.Lower)+" (ConvertTo and ConvertFrom)", "api/"+v+"/conversion.go")
		}
	}
	pkg := path.Join(webhookDir, hub.Version)
	return append(fs, pkg+"/"+hub.Lower+"_conversion.go", conversionTestFile(hub.Version, hub.Lower), pkg+"/roundtrip_test.go", "config/crd/patches/webhook_in_"+hub.Plural+".yaml")
}

func controllerFile(d apiData) string { return controllerDir + "/" + d.Lower + "_controller.go" }
