package ociimage

import (
	"archive/tar"
	"bytes"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// rootfs is the base layer's files; the Dockerfile copies the same
// directory.
//
//go:embed rootfs
var rootfs embed.FS

// file is one entry of a layer.
type file struct {
	name string // relative to /, without a leading slash; a directory ends in /
	mode int64
	data []byte
}

// Assemble makes the image of binary, a static linux executable for
// opts.Arch: the base layer, the binary's layer at opts.Entrypoint and the
// config, every timestamp at opts.Created. opts.ModuleRoot is not read.
func Assemble(binary []byte, opts Options) (v1.Image, error) {
	opts, err := opts.defaulted()
	if err != nil {
		return nil, err
	}
	base, err := baseFiles()
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	for _, l := range []struct {
		files []file
		by    string
	}{
		{base, "ociimage: /etc/passwd and /etc/group, root and nonroot (65532); " + CABundle},
		{[]file{{name: strings.TrimPrefix(opts.Entrypoint, "/"), mode: 0o755, data: binary}}, "ociimage: go build " + strings.Join(GoBuildFlags, " ") + " " + opts.Package},
	} {
		if img, err = appendLayer(img, l.files, l.by, opts.Created); err != nil {
			return nil, err
		}
	}
	return configure(img, opts)
}

// baseFiles lists rootfs with its directories, then the CA bundle, in
// lexical order.
func baseFiles() ([]file, error) {
	var files []file
	err := fs.WalkDir(rootfs, "rootfs", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "rootfs" {
			return err
		}
		name := strings.TrimPrefix(p, "rootfs/")
		if d.IsDir() {
			files = append(files, file{name: name + "/", mode: 0o755})
			return nil
		}
		data, err := rootfs.ReadFile(p)
		files = append(files, file{name: name, mode: 0o644, data: data})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the base layer's files: %w", err)
	}
	ca, err := caBundle()
	if err != nil {
		return nil, err
	}
	// After rootfs's etc/group and etc/passwd: still in lexical order.
	return append(files,
		file{name: "etc/ssl/", mode: 0o755},
		file{name: "etc/ssl/certs/", mode: 0o755},
		file{name: strings.TrimPrefix(CABundle, "/"), mode: 0o644, data: ca},
	), nil
}

func appendLayer(img v1.Image, files []file, createdBy string, created time.Time) (v1.Image, error) {
	data, err := tarFiles(files, created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("make the layer %q: %w", createdBy, err)
	}
	return mutate.Append(img, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: created}, CreatedBy: createdBy},
	})
}

// tarFiles writes files as a tar owned by root, every time at created.
func tarFiles(files []file, created time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, ModTime: created, Format: tar.FormatPAX, Typeflag: tar.TypeReg, Size: int64(len(f.data))}
		if strings.HasSuffix(f.name, "/") {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("write %s into a layer: %w", f.name, err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("write %s into a layer: %w", f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("close a layer: %w", err)
	}
	return buf.Bytes(), nil
}

// configure sets what runs and as whom; no Env: with no shell, PATH has
// nothing to find.
func configure(img v1.Image, opts Options) (v1.Image, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("read the image config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", opts.Arch
	cf.Created = v1.Time{Time: opts.Created}
	cf.Config = v1.Config{
		User:       User,
		Entrypoint: []string{opts.Entrypoint},
		WorkingDir: "/",
		Labels:     opts.Labels,
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("set the image config: %w", err)
	}
	return img, nil
}

// Files lists the paths in img's layers, layer by layer, as absolute paths
// (a directory ends in /): what the image holds, for tests and the build's
// summary.
func Files(img v1.Image) ([][]string, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("list the image's layers: %w", err)
	}
	out := make([][]string, len(layers))
	for i, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return nil, fmt.Errorf("read layer %d: %w", i, err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				rc.Close()
				return nil, fmt.Errorf("read layer %d: %w", i, err)
			}
			out[i] = append(out[i], path.Join("/", h.Name)+map[bool]string{true: "/"}[h.Typeflag == tar.TypeDir])
		}
		rc.Close()
	}
	return out, nil
}
