package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/opkit-dev/opkit/internal/scaffold"
)

func runCreateAPI(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("opkit create api", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: opkit create api --group G --version V --kind K [flags]\n\nAdds an API type, its controller or both to the project in the current\ndirectory (one opkit init made), then runs make manifests there.\n\nIf the kind's controller acts for whoever creates it (reads a Secret its\nspec names, writes into other namespaces), add --tenant-scoped: the\ncontroller then does that as a ServiceAccount the spec names, so the API\nserver decides each request as that ServiceAccount, not as the operator.\nSee docs/security.md in opkit.\n\nFlags:")
		fs.PrintDefaults()
	}
	var opts scaffold.APIOptions
	fs.StringVar(&opts.Group, "group", "", "the API group: ship makes ship.<domain>; with --resource=false a built-in group such as apps, or core")
	fs.StringVar(&opts.Version, "version", "", "the API version, such as v1, v1alpha1, v2beta3")
	fs.StringVar(&opts.Kind, "kind", "", "the kind, UpperCamelCase, such as Frigate")
	fs.BoolVar(&opts.Namespaced, "namespaced", true, "the kind lives in namespaces; false: cluster-scoped")
	fs.BoolVar(&opts.Resource, "resource", true, "scaffold the type and its CRD; false: a controller for a built-in type")
	fs.BoolVar(&opts.Controller, "controller", true, "scaffold a controller and its test")
	fs.BoolVar(&opts.TenantScoped, "tenant-scoped", false, "the kind gets spec.serviceAccountName (default: default) and its controller reads and writes what the spec asks for as that ServiceAccount of the kind's namespace (Manager.WriterAs); adds config/policy, an admission policy that lets a user name only a ServiceAccount they may impersonate, to config/default, and a sample of the namespace owner's consent to config/samples")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("create api: unexpected arguments %q: every option is a flag (see -h)", fs.Args())
	}
	dir, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("create api: %w", err)
	}
	opts.Progress, opts.Out = stderr, stdout
	return scaffold.CreateAPI(ctx, dir, opts)
}

func runCreateWebhook(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("opkit create webhook", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: opkit create webhook --group G --version V --kind K [--defaulting] [--validation [--requester-check]] [--conversion]\n       [--external-api-path P [--external-api-module M@V] [--external-api-crds F]]\n\nAdds webhooks for an API type that opkit create api made, or for a\nbuilt-in kind such as apps/v1 Deployment or core/v1 Pod (defaulting and\nvalidation only), the operator's webhook server and its certificates if\nthe project has none yet, then runs make manifests there.\n\nFor another Go module's custom resource, such as cert-manager.io/v1\nCertificate, give its package with --external-api-path (as kubebuilder\ntakes it): create webhook adds its module to go.mod, checks that it\nbuilds with the project's k8s.io modules and registers the kind, adds\nits AddToScheme to cmd/main.go and copies its CRD into\nconfig/crd/external, which the tests install and config/default does\nnot: the cluster must have the CRD.\n\nIf the kind's spec names other objects that the operator reads or writes\nwith its own permissions (a Secret to copy, namespaces to write to), add\n--requester-check: otherwise whoever may create the kind gets the\noperator's permissions. See docs/security.md in opkit.\n\nFlags:")
		fs.PrintDefaults()
	}
	var opts scaffold.WebhookOptions
	fs.StringVar(&opts.Group, "group", "", "the API group, as given to create api, such as ship; or a built-in group, such as apps, or core (or \"\") for Pod; or, with --external-api-path, another module's, such as cert-manager.io")
	fs.StringVar(&opts.Version, "version", "", "the API version, such as v1alpha1")
	fs.StringVar(&opts.Kind, "kind", "", "the kind, such as Frigate")
	fs.BoolVar(&opts.Defaulting, "defaulting", false, "scaffold a defaulter: a mutating webhook that sets defaults on create and update")
	fs.BoolVar(&opts.Validation, "validation", false, "scaffold a validator: a validating webhook for create and update")
	fs.BoolVar(&opts.RequesterCheck, "requester-check", false, "with --validation: the validator checks, with SubjectAccessReviews, that the requesting user may themselves do what the object asks the operator to do (get a Secret its spec names, say); adds create on subjectaccessreviews to the operator's RBAC")
	fs.StringVar(&opts.ExternalAPIPath, "external-api-path", "", "the Go import path of another module's API package, such as github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1; --group is then the kind's full group, such as cert-manager.io")
	fs.StringVar(&opts.ExternalAPIDomain, "external-api-domain", "", "with --external-api-path: the domain that follows --group, as kubebuilder takes it (--group cert-manager --external-api-domain io); leave it out with a full --group")
	fs.StringVar(&opts.ExternalAPIModule, "external-api-module", "", "with --external-api-path: the module to go get, module@version, such as github.com/cert-manager/cert-manager@v1.21.2 (default: the package's module at its latest version)")
	fs.StringVar(&opts.ExternalAPICRDs, "external-api-crds", "", "with --external-api-path: a CRD file, or a directory of them, that holds the kind's CRD (default: the YAML files of the module's source)")
	fs.BoolVar(&opts.Conversion, "conversion", false, "make --version the hub of the kind's conversion between its versions (the project must have two)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("create webhook: unexpected arguments %q: every option is a flag (see -h)", fs.Args())
	}
	dir, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("create webhook: %w", err)
	}
	opts.Progress, opts.Out = stderr, stdout
	return scaffold.CreateWebhook(ctx, dir, opts)
}
