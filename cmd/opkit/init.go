package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path"

	"github.com/opkit-dev/opkit/internal/scaffold"
)

func runInit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("opkit init", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: opkit init --module M [flags]\n       opkit init --from-kubebuilder DIR [--opkit-vendor P | --opkit-replace P]\n\nMakes a new operator project in the current directory, which must be empty\n(or hold only .git), then runs go mod tidy there; or ports the kubebuilder\nproject in DIR (which it only reads) into it, and lists in OPKIT_PORT.md\nwhat it mapped and what needs you.\n\nFlags:")
		fs.PrintDefaults()
	}
	var opts scaffold.InitOptions
	fs.StringVar(&opts.Module, "module", "", "the project's Go module path, such as example.com/acme-operator (required)")
	fs.StringVar(&opts.Domain, "domain", "example.com", "the domain of the project's API groups: --group ship makes ship.<domain>")
	fs.StringVar(&opts.Name, "name", "", "the operator's name (binary, namespace, Lease, RBAC roles); defaults to the last element of --module")
	fs.StringVar(&opts.OpkitVendor, "opkit-vendor", "", "a local opkit checkout to copy into third_party/opkit, which go.mod's replace directives point at: the project builds anywhere (CI, a fresh clone) with an opkit that the module proxy does not serve (a build from a checkout)")
	fs.BoolVar(&opts.Fleet, "fleet", false, "make a fleet operator (pkg/fleet): the cluster it runs against is the hub, its members the kubeconfigs in the Secrets of its namespace there, and cmd/fleet.go watches ConfigMaps in every member")
	fs.StringVar(&opts.OpkitReplace, "opkit-replace", "", "a local opkit checkout for go.mod's replace directive, in place: for work on opkit itself (CI cannot see it); see --opkit-vendor")
	fromKubebuilder := fs.String("from-kubebuilder", "", "a kubebuilder project to port (read only): its copy here runs its controllers and webhooks, unchanged, on opkit's manager; OPKIT_PORT.md lists every item mapped and every item that needs a hand")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("init: unexpected arguments %q: every option is a flag (see -h)", fs.Args())
	}
	if *fromKubebuilder != "" {
		return runFromKubebuilder(ctx, fs, *fromKubebuilder, opts, stdout, stderr)
	}
	if opts.Module == "" {
		return fmt.Errorf("init: --module is required: the project's Go module path, such as example.com/acme-operator")
	}
	dir, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	opts.OpkitVersion = Version()
	opts.Progress = stderr
	if err := scaffold.Init(ctx, dir, opts); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Made the project %s in %s. Next:\n  go tool opkit create api --group <group> --version v1alpha1 --kind <Kind>\n  make run\n  make test\n", opts.Module, dir)
	if opts.Fleet {
		name := opts.Name
		if name == "" {
			name = path.Base(opts.Module)
		}
		fmt.Fprintf(stdout, "Engage a member cluster with its kubeconfig, on the cluster the operator runs against (the hub):\n  kubectl -n %s-system create secret generic <member> --from-file=kubeconfig=<its kubeconfig>\n", name)
	}
	return nil
}

// runFromKubebuilder is opkit init --from-kubebuilder DIR.
func runFromKubebuilder(ctx context.Context, fs *flag.FlagSet, source string, opts scaffold.InitOptions, stdout, stderr io.Writer) error {
	domain := false
	fs.Visit(func(f *flag.Flag) { domain = domain || f.Name == "domain" })
	if opts.Module != "" || opts.Name != "" || opts.Fleet || domain {
		return fmt.Errorf("init: --from-kubebuilder takes the module, name and domain from the kubebuilder project: leave out --module, --name, --domain and --fleet")
	}
	dir, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	res, err := scaffold.FromKubebuilder(ctx, dir, scaffold.FromKubebuilderOptions{
		Source:       source,
		OpkitVersion: Version(),
		OpkitVendor:  opts.OpkitVendor,
		OpkitReplace: opts.OpkitReplace,
		Progress:     stderr,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Ported %s into %s: %d items mapped, %d that need you, each listed with its file and line in OPKIT_PORT.md. Next:\n  make test\n", source, dir, res.Mapped, res.Needs)
	return nil
}
