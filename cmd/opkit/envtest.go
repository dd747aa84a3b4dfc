package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/opkit-dev/opkit/internal/envtest"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

func runEnvtest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("opkit envtest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: opkit envtest [--dir DIR] [--print]

Builds kube-apiserver, etcd and kubectl of Kubernetes v%s from the Go
module proxy (pinned versions, compiled from source: nothing else is
downloaded) into a directory shared by every project on this machine, and
prints that directory. Once built, it does nothing. pkg/testenv finds the
binaries there. A cold build takes about fifteen minutes on two cores.

KUBEBUILDER_ASSETS, when set, wins: it is checked and nothing is built.

Flags:
`, envtest.Version)
		fs.PrintDefaults()
	}
	shared, err := testenv.SharedBinaryDir(envtest.Version)
	if err != nil {
		shared = "$XDG_CACHE_HOME/opkit/k8s/" + envtest.Version
	}
	dir := fs.String("dir", "", "build into this directory instead of the shared one ("+shared+")")
	print := fs.Bool("print", false, "print the directory only; build nothing")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("envtest: unexpected arguments %q (see opkit envtest -h)", fs.Args())
	}
	if *print {
		d := *dir
		switch {
		case d != "":
		case os.Getenv("KUBEBUILDER_ASSETS") != "":
			d = os.Getenv("KUBEBUILDER_ASSETS")
		default:
			if d, err = testenv.SharedBinaryDir(envtest.Version); err != nil {
				return err
			}
		}
		_, err := fmt.Fprintln(stdout, d)
		return err
	}
	d, err := envtest.Build(ctx, envtest.Options{Dir: *dir, Log: stderr})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, d)
	return err
}
