package ociimage

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"debug/elf"
	"encoding/pem"
	"io"
	"log"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

var created = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func assemble(t *testing.T, binary []byte, at time.Time) v1.Image {
	t.Helper()
	img, err := Assemble(binary, Options{Arch: "amd64", Created: at})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func digest(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestAssembleLayers(t *testing.T) {
	img := assemble(t, []byte("not really a binary"), created)
	files, err := Files(img)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"/etc/", "/etc/group", "/etc/passwd", "/etc/ssl/", "/etc/ssl/certs/", CABundle}, {"/sample-operator"}}
	if diff := cmp.Diff(want, files); diff != "" {
		t.Errorf("layers' files (-want +got):\n%s", diff)
	}
	headers := layerHeaders(t, img)
	for name, h := range headers {
		if !h.ModTime.Equal(created) || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: time %v uid %d gid %d, want %v, root-owned", name, h.ModTime, h.Uid, h.Gid, created)
		}
	}
	if m := headers["sample-operator"].Mode; m != 0o755 {
		t.Errorf("/sample-operator mode %o, want 755: user 65532 must execute it", m)
	}
	passwd := string(headers["etc/passwd"].data)
	if !strings.Contains(passwd, "\nnonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd names no nonroot user 65532:\n%s", passwd)
	}
	if got := string(headers["sample-operator"].data); got != "not really a binary" {
		t.Errorf("/sample-operator holds %q, want the binary", got)
	}
}

// TestImageHoldsCABundle reads the image's CA bundle as crypto/x509's
// SystemCertPool does on Linux: every block a certificate, and among them
// the roots a public TLS server chains to (issue 48: an operator calling
// out over TLS failed for want of them).
func TestImageHoldsCABundle(t *testing.T) {
	h, ok := layerHeaders(t, assemble(t, []byte("binary"), created))[strings.TrimPrefix(CABundle, "/")]
	if !ok {
		t.Fatalf("the image has no %s", CABundle)
	}
	if h.Mode != 0o644 {
		t.Errorf("%s mode %o, want 644: user 65532 must read it", CABundle, h.Mode)
	}
	var subjects []string
	for rest := h.data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			if len(bytes.TrimSpace(rest)) > 0 {
				t.Errorf("%s ends in %d bytes that are not PEM", CABundle, len(rest))
			}
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil || b.Type != "CERTIFICATE" {
			t.Fatalf("%s holds a %s block that is no certificate: %v", CABundle, b.Type, err)
		}
		subjects = append(subjects, c.Subject.CommonName)
	}
	if len(subjects) < 100 {
		t.Errorf("%s holds %d certificates, want the Mozilla roots (over 100)", CABundle, len(subjects))
	}
	for _, want := range []string{"ISRG Root X1", "DigiCert Global Root G2", "Amazon Root CA 1"} {
		if !slices.Contains(subjects, want) {
			t.Errorf("%s lacks %q", CABundle, want)
		}
	}
}

// header is a tar header with the entry's contents.
type header struct {
	*tar.Header
	data []byte
}

func layerHeaders(t *testing.T, img v1.Image) map[string]header {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]header{}
	for _, l := range layers {
		if mt, _ := l.MediaType(); mt != types.OCILayer {
			t.Errorf("layer media type %s, want %s", mt, types.OCILayer)
		}
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for h, err := tr.Next(); err != io.EOF; h, err = tr.Next() {
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			out[h.Name] = header{h, data}
		}
		rc.Close()
	}
	return out
}

func TestAssembleConfig(t *testing.T) {
	cf, err := assemble(t, []byte("x"), created).ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	want := v1.Config{User: "65532:65532", Entrypoint: []string{"/sample-operator"}, WorkingDir: "/", Labels: Labels}
	if diff := cmp.Diff(want, cf.Config); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" || !cf.Created.Equal(created) {
		t.Errorf("config: os %s arch %s created %v, want linux amd64 %v", cf.OS, cf.Architecture, cf.Created, created)
	}
	for _, h := range cf.History {
		if !h.Created.Equal(created) {
			t.Errorf("history %q created %v, want %v", h.CreatedBy, h.Created, created)
		}
	}
}

// TestAssembleOtherOperator assembles a scaffolded project's operator, as
// its make image does.
func TestAssembleOtherOperator(t *testing.T) {
	labels := map[string]string{"org.opencontainers.image.title": "acme-operator"}
	img, err := Assemble([]byte("x"), Options{Arch: "arm64", Created: created, Package: "./cmd", Entrypoint: "/manager", Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	want := v1.Config{User: "65532:65532", Entrypoint: []string{"/manager"}, WorkingDir: "/", Labels: labels}
	if diff := cmp.Diff(want, cf.Config); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if _, ok := layerHeaders(t, img)["manager"]; !ok || cf.Architecture != "arm64" {
		t.Errorf("the image has no /manager for arm64 (architecture %s)", cf.Architecture)
	}
}

func TestAssembleIsReproducible(t *testing.T) {
	a, b := assemble(t, []byte("x"), created), assemble(t, []byte("x"), created)
	if da, db := digest(t, a), digest(t, b); da != db {
		t.Errorf("the same binary gave two digests: %s and %s", da, db)
	}
	if da, dc := digest(t, a), digest(t, assemble(t, []byte("x"), created.Add(time.Second))); da == dc {
		t.Errorf("another time gave the same digest %s: timestamps are not in the image", da)
	}
}

func TestSourceDateEpoch(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1767323045")
	got, err := SourceDateEpoch()
	if err != nil || !got.Equal(created) {
		t.Errorf("SourceDateEpoch() = %v, %v; want %v", got, err, created)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "yesterday")
	if _, err := SourceDateEpoch(); err == nil || !strings.Contains(err.Error(), "SOURCE_DATE_EPOCH") {
		t.Errorf("SourceDateEpoch() with a bad value: error %v, want one naming SOURCE_DATE_EPOCH", err)
	}
}

// TestBuildIsStaticWithoutShell compiles the real operator: a dynamically
// linked binary would not start on a base without libc.
func TestBuildIsStaticWithoutShell(t *testing.T) {
	img, err := Build(t.Context(), Options{Created: created})
	if err != nil {
		t.Fatal(err)
	}
	headers := layerHeaders(t, img)
	for name := range headers {
		if base := filepath.Base(name); base == "sh" || base == "bash" || base == "busybox" {
			t.Errorf("the image holds a shell: %s", name)
		}
	}
	f, err := elf.NewFile(bytes.NewReader(headers["sample-operator"].data))
	if err != nil {
		t.Fatalf("/sample-operator is not an ELF binary: %v", err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("/sample-operator is dynamically linked (program header %v)", p.Type)
		}
	}
}

func TestWrite(t *testing.T) {
	img := assemble(t, []byte("x"), created)
	dir := t.TempDir()
	const tag = "registry.example/opkit/sample-operator:v1"
	if err := Write(dir, img, tag, TarFile); err != nil {
		t.Fatal(err)
	}
	// A second Write replaces the first instead of adding to the layout.
	if err := Write(dir, img, tag, TarFile); err != nil {
		t.Fatal(err)
	}
	idx, err := layout.ImageIndexFromPath(filepath.Join(dir, LayoutDir))
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Digest != digest(t, img) || im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != tag {
		t.Errorf("layout index holds %+v, want the image %s named %s once", im.Manifests, digest(t, img), tag)
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		t.Fatal(err)
	}
	fromTar, err := tarball.ImageFromPath(filepath.Join(dir, TarFile), &ref)
	if err != nil {
		t.Fatalf("the tarball has no image tagged %s: %v", tag, err)
	}
	if got, want := layerDigests(t, fromTar), layerDigests(t, img); !cmp.Equal(got, want) {
		t.Errorf("tarball layers %v, want %v", got, want)
	}
}

func layerDigests(t *testing.T, img v1.Image) []v1.Hash {
	t.Helper()
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	var out []v1.Hash
	for _, l := range m.Layers {
		out = append(out, l.Digest)
	}
	return out
}

// TestPush pushes to a registry served in the test process on loopback.
func TestPush(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	img := assemble(t, []byte("x"), created)
	ref := u.Host + "/opkit/sample-operator:test"
	if err := Push(t.Context(), img, ref); err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Image(r, remote.WithContext(t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := digest(t, pulled), digest(t, img); got != want {
		t.Errorf("pulled %s, pushed %s", got, want)
	}
}

func TestDockerfileMatches(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := parseDockerfile(string(data))
	var build []string
	for _, run := range df["RUN"] {
		if w := shellWords(run); len(w) > 4 && cmp.Equal(w[:4], []string{"CGO_ENABLED=0", "GOOS=linux", "go", "build"}) {
			build = w[4:]
		}
	}
	if len(build) < len(GoBuildFlags) || !cmp.Equal(build[:len(GoBuildFlags)], GoBuildFlags) {
		t.Errorf("the Dockerfile's go build %q does not start with CGO_ENABLED=0 and %q", build, GoBuildFlags)
	}
	for _, c := range []struct{ instr, want string }{
		{"COPY", "hack/image/ociimage/rootfs/ /"},
		{"COPY", "--from=builder " + CABundle + " " + CABundle},
		{"COPY", "--from=builder /out/sample-operator " + Entrypoint},
		{"USER", User},
		{"ENTRYPOINT", `["` + Entrypoint + `"]`},
		{"FROM", "scratch"},
	} {
		if !contains(df[c.instr], c.want) {
			t.Errorf("the Dockerfile has no %s %s (it has %q)", c.instr, c.want, df[c.instr])
		}
	}
	labels := map[string]string{}
	for _, l := range df["LABEL"] {
		w := shellWords(l)
		for _, kv := range w {
			k, v, _ := strings.Cut(kv, "=")
			labels[k] = v
		}
	}
	if diff := cmp.Diff(Labels, labels); diff != "" {
		t.Errorf("the Dockerfile's labels (-ociimage +Dockerfile):\n%s", diff)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// parseDockerfile returns each instruction's arguments, continuation lines
// joined, comments dropped.
func parseDockerfile(s string) map[string][]string {
	out := map[string][]string{}
	var line string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		if c, ok := strings.CutSuffix(l, `\`); ok {
			line += c
			continue
		}
		line += l
		if instr, args, ok := strings.Cut(strings.TrimSpace(line), " "); ok {
			out[instr] = append(out[instr], strings.TrimSpace(args))
		}
		line = ""
	}
	return out
}

// shellWords splits s into words as a shell would, for double quotes only.
func shellWords(s string) []string {
	var words []string
	var w strings.Builder
	inWord, quoted := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case (r == ' ' || r == '\t') && !quoted:
			if inWord {
				words = append(words, w.String())
				w.Reset()
			}
			inWord = false
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}
