// Command image builds an operator's container image without Docker (make
// image; see package ociimage): it writes an OCI image layout and a
// docker-compatible tarball under bin/image/, prints the image's digest,
// size and layers, and pushes it when given a reference.
//
//	go -C hack/image run . [-out dir] [-tag name:tag] [-arch amd64] [-push registry/repo:tag]
//
// hack/image is a module of its own, whose dependencies stay out of the
// SDK's go.mod. By default it builds the sample operator of the opkit
// checkout around it. A project opkit scaffolded runs it as a tool of its
// go.mod (its make image) on its own operator:
//
//	go tool github.com/opkit-dev/opkit/hack/image -root . -package ./cmd -entrypoint /manager -name NAME -tag IMG
//
// -out defaults to bin/image under the directory it runs in; make image
// sets it to the root's bin/image. The tarball is -name.tar there.
//
// -push defaults to IMAGE_PUSH; the tarball is tagged with -tag, or with
// the -push reference when only that is given.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"

	"github.com/opkit-dev/opkit/hack/image/ociimage"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	out := fs.String("out", "bin/image", "directory to write the image layout and tarball into")
	tag := fs.String("tag", "", "the tarball's and layout's image name; defaults to -push, else "+ociimage.DefaultTag)
	arch := fs.String("arch", runtime.GOARCH, "GOARCH of the image: amd64, arm64, ...")
	push := fs.String("push", os.Getenv("IMAGE_PUSH"), "registry/repository:tag to push to (IMAGE_PUSH); empty: no push")
	root := fs.String("root", "", "the operator's module root; default: the opkit checkout around the working directory")
	pkg := fs.String("package", ociimage.Package, "the operator's main package, relative to -root")
	entrypoint := fs.String("entrypoint", ociimage.Entrypoint, "the binary's path in the image, which the image runs")
	name := fs.String("name", "", "the operator's name: the tarball's (name.tar) and the image's title label; default: the sample operator's, with its labels")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: every option is a flag (see -h)", fs.Args())
	}
	if *tag == "" {
		*tag = ociimage.DefaultTag
		if *push != "" {
			*tag = *push
		}
	}
	opts := ociimage.Options{ModuleRoot: *root, Package: *pkg, Entrypoint: *entrypoint, Arch: *arch}
	tarFile := ociimage.TarFile
	if *name != "" {
		opts.Labels = map[string]string{"org.opencontainers.image.title": *name}
		tarFile = *name + ".tar"
	}
	img, err := ociimage.Build(ctx, opts)
	if err != nil {
		return err
	}
	if err := ociimage.Write(*out, img, *tag, tarFile); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "image  %s\nlayout %s/%s\ntar    %s/%s\n", *tag, *out, ociimage.LayoutDir, *out, tarFile)
	if err := ociimage.Summarize(stdout, img); err != nil {
		return err
	}
	if *push != "" {
		if err := ociimage.Push(ctx, img, *push); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "pushed %s\n", *push)
	}
	return nil
}
