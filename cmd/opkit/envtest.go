package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/opkit-dev/opkit/internal/envtest"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

func runEnvtest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("opkit envtest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: opkit envtest [--version V] [--dir DIR] [--print] [--list]

Builds kube-apiserver, etcd and kubectl of Kubernetes v%s (or of
--version) from the Go module proxy (pinned versions, compiled from source:
nothing else is downloaded) into a directory shared by every project on
this machine, and prints that directory. Once built, it does nothing.
pkg/testenv finds the binaries there (OPKIT_K8S_VERSION selects a version
for tests). A cold build takes about fifteen minutes on two cores.

Pinned versions: %s.

KUBEBUILDER_ASSETS, when set and --version is not, wins: it is checked and
nothing is built.

Flags:
`, envtest.Version, strings.Join(envtest.Versions(), ", "))
		fs.PrintDefaults()
	}
	version := fs.String("version", "", "the Kubernetes version to build: a pinned one, or its minor (1.34); defaults to "+envtest.Version)
	dir := fs.String("dir", "", "build into this directory instead of the shared one ($XDG_CACHE_HOME/opkit/k8s/<version>)")
	print := fs.Bool("print", false, "print the directory only; build nothing")
	list := fs.Bool("list", false, "print the pinned versions, one per line, and whether each is built; build nothing")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("envtest: unexpected arguments %q (see opkit envtest -h)", fs.Args())
	}
	v, err := envtest.Resolve(*version)
	if err != nil {
		return err
	}
	if *list {
		for _, v := range envtest.Versions() {
			state := "not built"
			if envtest.Built(v) {
				state = "built"
			}
			if _, err := fmt.Fprintf(stdout, "%s\t%s\n", v, state); err != nil {
				return err
			}
		}
		return nil
	}
	if *print {
		d := *dir
		switch {
		case d != "":
		case os.Getenv("KUBEBUILDER_ASSETS") != "" && *version == "":
			d = os.Getenv("KUBEBUILDER_ASSETS")
		default:
			if d, err = testenv.SharedBinaryDir(v); err != nil {
				return err
			}
		}
		_, err := fmt.Fprintln(stdout, d)
		return err
	}
	d, err := envtest.Build(ctx, envtest.Options{Version: *version, Dir: *dir, Log: stderr})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, d)
	return err
}
