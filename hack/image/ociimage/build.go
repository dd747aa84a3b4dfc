package ociimage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Package is the sample operator's Go package, relative to the module
// root: Options.Package's default.
const Package = "./cmd/sample-operator"

// Entrypoint is where the sample operator's image holds its binary, and
// what it runs: the path config/manager's Deployment names as its command
// (Options.Entrypoint's default).
const Entrypoint = "/sample-operator"

// User is the image's user and group: distroless's "nonroot", numeric so
// that runAsNonRoot can verify it.
const User = "65532:65532"

// GoBuildFlags are the go build flags of the operator's binary, here and
// in the Dockerfile: -tags nolocal leaves --local's test control plane out,
// -trimpath keeps the build directory out of the binary (reproducible), and
// -s -w drop the symbol table and DWARF, which a pod never reads.
var GoBuildFlags = []string{"-tags", "nolocal", "-trimpath", "-ldflags=-s -w"}

// Labels are the sample operator's image's OCI annotations, here and in
// the Dockerfile: Options.Labels's default.
var Labels = map[string]string{
	"org.opencontainers.image.title":       "sample-operator",
	"org.opencontainers.image.description": "opkit's Mirror sample operator: copies a ConfigMap or Secret into every namespace that matches a selector",
	"org.opencontainers.image.source":      "https://github.com/opkit-dev/opkit",
	"org.opencontainers.image.licenses":    "Apache-2.0",
}

// Options configure Build and Assemble. The zero value builds the sample
// operator for the machine's architecture from the opkit checkout around
// the working directory, with timestamps at the Unix epoch; a project
// opkit scaffolded sets ModuleRoot, Package, Entrypoint and Labels.
type Options struct {
	// ModuleRoot is the directory of the go.mod of the operator's module.
	// Defaults to the nearest directory at or above the working directory
	// that holds opkit's (not a nested module's, such as hack/image's).
	ModuleRoot string

	// Package is the operator's main package, relative to ModuleRoot.
	// Defaults to Package.
	Package string

	// Entrypoint is the absolute path of the binary in the image, and what
	// the image runs. Defaults to Entrypoint.
	Entrypoint string

	// Labels are the image config's labels. Defaults to Labels.
	Labels map[string]string

	// Arch is the GOARCH to build for. Defaults to runtime.GOARCH.
	Arch string

	// Created is every timestamp in the image. Defaults to
	// SOURCE_DATE_EPOCH (seconds) when set, else the Unix epoch.
	Created time.Time
}

// Build compiles the operator with GoBuildFlags and assembles its image.
// It needs the go command and the module's dependencies, not the network
// when they are in the module cache.
func Build(ctx context.Context, opts Options) (v1.Image, error) {
	opts, err := opts.defaulted()
	if err != nil {
		return nil, err
	}
	if opts.ModuleRoot == "" {
		if opts.ModuleRoot, err = moduleRoot(); err != nil {
			return nil, err
		}
	}
	bin, err := Compile(ctx, opts.ModuleRoot, opts.Package, opts.Arch)
	if err != nil {
		return nil, err
	}
	return Assemble(bin, opts)
}

// Compile builds the static linux binary of pkg, a main package relative
// to moduleRoot, for arch with GoBuildFlags and returns its contents.
func Compile(ctx context.Context, moduleRoot, pkg, arch string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "opkit-image-")
	if err != nil {
		return nil, fmt.Errorf("make a build directory: %w", err)
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "operator")
	args := append(append([]string{"build"}, GoBuildFlags...), "-o", out, pkg)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = moduleRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("compile %s for linux/%s: %w: %s", pkg, arch, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return os.ReadFile(out)
}

// defaulted fills in every default but ModuleRoot's, which only Build
// needs.
func (o Options) defaulted() (Options, error) {
	if o.Package == "" {
		o.Package = Package
	}
	if o.Entrypoint == "" {
		o.Entrypoint = Entrypoint
	}
	if o.Labels == nil {
		o.Labels = Labels
	}
	if o.Arch == "" {
		o.Arch = runtime.GOARCH
	}
	if o.Created.IsZero() {
		created, err := SourceDateEpoch()
		if err != nil {
			return o, err
		}
		o.Created = created
	}
	return o, nil
}

// SourceDateEpoch returns the time SOURCE_DATE_EPOCH holds (the
// reproducible-builds.org convention), or the Unix epoch when it is unset.
func SourceDateEpoch() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("parse SOURCE_DATE_EPOCH %q: it must be seconds since the epoch: %w", s, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// opkitModule is the path of opkit's module, whose operator the image
// holds; hack/image is a module of its own nested in it.
const opkitModule = "github.com/opkit-dev/opkit"

// moduleRoot returns the nearest directory at or above the working
// directory whose go.mod is opkit's, passing over nested modules' (such
// as hack/image's).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find the module root: %w", err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && modulePath(b) == opkitModule {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find the module root: no go.mod of " + opkitModule + " at or above the working directory; run from opkit's checkout or set Options.ModuleRoot")
		}
		dir = parent
	}
}

// modulePath returns the path the module line of a go.mod names.
func modulePath(gomod []byte) string {
	for _, l := range strings.Split(string(gomod), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "module"); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}
