// Command opkit scaffolds and serves operator projects built on opkit:
//
//	opkit init --module example.com/acme-operator   a new project
//	opkit create api --group G --version V --kind K an API and its controller
//	opkit create webhook --group G --version V --kind K --defaulting --validation
//	                                                webhooks for the API
//	opkit create webhook ... --external-api-path P  webhooks for another module's kind
//	opkit upgrade [--dry-run]                       the project moved to this opkit's templates
//	opkit envtest                                   the local control plane's binaries
//	opkit version                                   the opkit version of this binary
//
// Run "opkit <command> -h" for a command's flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
)

// command is a subcommand: its name (words, as typed: "create api"), a line
// of help, and what runs it with the arguments after its name.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands are opkit's subcommands, in the order help lists them.
var commands = []command{
	{name: "init", summary: "make a new operator project in the current directory", run: runInit},
	{name: "create api", summary: "add an API type and its controller to the project", run: runCreateAPI},
	{name: "create webhook", summary: "add defaulting, validation or conversion webhooks for an API type", run: runCreateWebhook},
	{name: "upgrade", summary: "move the project to this opkit's templates, merging your edits", run: runUpgrade},
	{name: "envtest", summary: "build the local control plane (kube-apiserver, etcd, kubectl) into a directory every project shares", run: runEnvtest},
	{name: "version", summary: "print the opkit version of this binary", run: runVersion},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "opkit:", err)
		os.Exit(1)
	}
}

// errUsage is returned, after the usage is printed, for a command line
// that names no command opkit has.
var errUsage = errors.New("see the usage above")

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		return nil
	}
	for _, c := range commands {
		words := strings.Fields(c.name)
		if len(args) >= len(words) && slices.Equal(args[:len(words)], words) {
			err := c.run(ctx, args[len(words):], stdout, stderr)
			if errors.Is(err, flag.ErrHelp) {
				return nil
			}
			return err
		}
	}
	usage(stderr)
	return fmt.Errorf("unknown command %q: %w", strings.Join(args, " "), errUsage)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "opkit scaffolds operator projects built on opkit, and builds their local control plane.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: opkit <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-15s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "opkit <command> -h" for a command's flags.`)
}

// Version returns the opkit module version this binary was built from:
// the version "go install github.com/opkit-dev/opkit/cmd/opkit@v…"
// installed, or "(devel)" for a build from a checkout.
func Version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok || info.Main.Version == "" {
		return "(devel)"
	}
	return info.Main.Version
}

func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("opkit version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("version: unexpected arguments %q", fs.Args())
	}
	_, err := fmt.Fprintln(stdout, Version())
	return err
}
