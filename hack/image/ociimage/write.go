package ociimage

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// DefaultTag is the name Write gives the image when none is asked for.
const DefaultTag = "ghcr.io/opkit-dev/sample-operator:latest"

// Paths of Write's outputs under its directory.
const (
	LayoutDir = "oci"                 // an OCI image layout
	TarFile   = "sample-operator.tar" // the sample operator's tarball
)

// Write writes img named tag under dir: an OCI image layout in
// dir/LayoutDir (the manifest annotated with the tag as its
// org.opencontainers.image.ref.name) and, in dir/tarFile, a tarball in the
// format of docker save (manifest.json naming the config, the layers and
// the tag), which docker load, kind load image-archive and ctr import
// accept. It replaces what an earlier Write left there.
func Write(dir string, img v1.Image, tag, tarFile string) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("parse the image tag %q: %w", tag, err)
	}
	lp := filepath.Join(dir, LayoutDir)
	if err := os.RemoveAll(lp); err != nil {
		return fmt.Errorf("remove the old image layout: %w", err)
	}
	p, err := layout.Write(lp, empty.Index)
	if err != nil {
		return fmt.Errorf("write the image layout %s: %w", lp, err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref.Name()})); err != nil {
		return fmt.Errorf("write the image into %s: %w", lp, err)
	}
	if err := tarball.WriteToFile(filepath.Join(dir, tarFile), ref, img); err != nil {
		return fmt.Errorf("write the image tarball: %w", err)
	}
	return nil
}

// Push pushes img to ref (registry/repository:tag) with the credentials
// that docker login, podman login or a credential helper stored (the
// default keychain), anonymously if none.
func Push(ctx context.Context, img v1.Image, ref string) error {
	r, err := name.ParseReference(ref)
	if err != nil {
		return fmt.Errorf("parse the image reference %q: %w", ref, err)
	}
	if err := remote.Write(r, img, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return fmt.Errorf("push the image to %s: %w", r, err)
	}
	return nil
}

// Summarize prints img's digest, its size (the manifest, the config and
// the compressed layers: what a registry stores and a node pulls), and its
// layers with their files.
func Summarize(w io.Writer, img v1.Image) error {
	digest, err := img.Digest()
	if err != nil {
		return fmt.Errorf("compute the image digest: %w", err)
	}
	m, err := img.Manifest()
	if err != nil {
		return fmt.Errorf("read the image manifest: %w", err)
	}
	files, err := Files(img)
	if err != nil {
		return err
	}
	mSize, err := img.Size()
	if err != nil {
		return fmt.Errorf("compute the manifest size: %w", err)
	}
	total := mSize + m.Config.Size
	for _, l := range m.Layers {
		total += l.Size
	}
	fmt.Fprintf(w, "digest %s\nsize   %d bytes (%.1f MiB)\n", digest, total, float64(total)/(1<<20))
	for i, l := range m.Layers {
		fmt.Fprintf(w, "layer  %d %s %d bytes %v\n", i, l.Digest, l.Size, files[i])
	}
	return nil
}
