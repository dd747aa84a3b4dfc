package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/opkit-dev/opkit/internal/scaffold"
)

func runUpgrade(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("opkit upgrade", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `Usage: opkit upgrade [--dry-run]

Moves the project in the current directory to this opkit's templates: first
require the new opkit (go get github.com/opkit-dev/opkit@<version>), then run
go tool opkit upgrade. Files opkit owns are rewritten; your files are left
alone unless opkit's template for them changed, and then your edits and
opkit's are merged (git merge-file). Where both changed the same lines, the
file holds both between conflict markers (without git, opkit's version goes
beside it as <file>.opkit-new), and upgrade exits non-zero naming the files.
.opkit/base records what opkit's templates made, the base of the merges:
commit it. Then run make manifests and make test.

Flags:`)
		fs.PrintDefaults()
	}
	var opts scaffold.UpgradeOptions
	fs.BoolVar(&opts.DryRun, "dry-run", false, "list what would change, and write nothing")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("upgrade: unexpected arguments %q: every option is a flag (see -h)", fs.Args())
	}
	dir, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("upgrade: %w", err)
	}
	opts.Out = stdout
	return scaffold.Upgrade(ctx, dir, opts)
}
