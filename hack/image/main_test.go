package main

import (
	"bytes"
	"io"
	"log"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/opkit-dev/opkit/hack/image/ociimage"
)

// TestRunPushes builds the operator's image, writes it, and pushes it to
// a registry served by the test on loopback: the tarball is named after
// the push reference, and the registry holds what the summary printed.
func TestRunPushes(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ref := u.Host + "/team/sample-operator:v0.1.0"
	t.Setenv("IMAGE_PUSH", ref)
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run(t.Context(), []string{"-out", dir}, &out); err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	written, err := tarball.ImageFromPath(filepath.Join(dir, ociimage.TarFile), &tag)
	if err != nil {
		t.Fatalf("the tarball holds no image tagged %s: %v", ref, err)
	}
	pushed, err := remote.Image(tag, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	// A docker tarball keeps the config, not the manifest: the image ID
	// (the config's digest) is what docker load shows.
	wc, err1 := written.ConfigName()
	pc, err2 := pushed.ConfigName()
	if err1 != nil || err2 != nil || wc != pc {
		t.Errorf("written config %s (%v), pushed %s (%v): want one image", wc, err1, pc, err2)
	}
	pd, err := pushed.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "digest "+pd.String()) || !strings.Contains(out.String(), "pushed "+ref) {
		t.Errorf("the summary does not name the pushed digest %s and the push:\n%s", pd, out.String())
	}
}

func TestRunRefusesArguments(t *testing.T) {
	err := run(t.Context(), []string{"bin/image"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "every option is a flag") {
		t.Errorf("run with an argument: %v, want an error saying options are flags", err)
	}
}
