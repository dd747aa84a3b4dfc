// Command opkit-testenv runs a local control plane (kube-apiserver and etcd,
// from pkg/testenv) until interrupted, and writes a kubeconfig for it.
//
//	opkit-testenv [--kubeconfig PATH] [--crds DIR]... [--members N [--members-namespace NS]]
//
// 'make run-control-plane' starts it. With --members N it starts N more
// control planes at once, the members of a fleet whose hub is the first
// (pkg/fleet): it writes each member's kubeconfig beside the hub's, as
// member-<i>.kubeconfig, and puts it in a Secret of the hub's namespace NS
// (fleet-system), named member-<i>, for fleet.KubeconfigSecrets. Ctrl-C
// (SIGINT), SIGTERM or SIGHUP stops the control planes and removes their
// data and the kubeconfigs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opkit-dev/opkit/pkg/testenv"
)

type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	// SIGHUP (the terminal closed) stops cleanly too, and a closed stdout
	// (say, 'make run | tee' interrupted) must not kill the program with
	// SIGPIPE before it has stopped the control plane.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	signal.Ignore(syscall.SIGPIPE)
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "opkit-testenv: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("opkit-testenv", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", filepath.Join("bin", "run", "kubeconfig"), "where to write the kubeconfig for the control plane")
	var crds stringList
	fs.Var(&crds, "crds", "directory of CRD manifests to install (repeatable)")
	members := fs.Int("members", 0, "start this many member control planes too, whose hub is the first (at most 5)")
	membersNamespace := fs.String("members-namespace", "fleet-system", "with --members: the hub namespace of the Secrets that hold the members' kubeconfigs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *members < 0 || *members > maxMembers {
		return fmt.Errorf("--members is %d: it must be between 0 and %d", *members, maxMembers)
	}
	path, err := filepath.Abs(*kubeconfig)
	if err != nil {
		return err
	}

	fmt.Fprintln(out, "Starting kube-apiserver and etcd...")
	if *members > 0 {
		return serveFleet(ctx, crds, *members, *membersNamespace, path, out)
	}
	env, err := testenv.Start(testenv.Options{CRDDirs: crds})
	if err != nil {
		return err
	}
	err = serve(ctx, env, path, out)
	fmt.Fprintln(out, "Stopping the control plane...")
	return errors.Join(err, env.Stop(), removeIfExists(path))
}

func serve(ctx context.Context, env *testenv.Environment, kubeconfig string, out io.Writer) error {
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}
	v, err := env.Client().Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("ask the API server its version: %w", err)
	}
	ns, err := env.Client().CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list namespaces: %w", err)
	}
	fmt.Fprintf(out, `
Control plane %s is running at %s (%d namespaces).
Kubeconfig: %s

Try, in another terminal:
  kubectl --kubeconfig %s get namespaces

Press Ctrl-C to stop it.
`, v.GitVersion, env.Config().Host, len(ns.Items), kubeconfig, kubeconfig)
	<-ctx.Done()
	return nil
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove kubeconfig: %w", err)
	}
	return nil
}
