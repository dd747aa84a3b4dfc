package container

import (
	"crypto/x509"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/x509roots/fallback/bundle"

	"github.com/opkit-dev/opkit/hack/image/ociimage"
)

// TestImageTrustsSystemRoots runs a Go binary in the image make image
// builds, as the non-root user, with SSL_CERT_FILE unset: it verifies
// Let's Encrypt's root against x509.SystemCertPool, which reads
// /etc/ssl/certs/ca-certificates.crt on Linux (issue 48: without a CA
// bundle, an operator calling out over TLS failed).
func TestImageTrustsSystemRoots(t *testing.T) {
	requireRuntime(t)
	bin := filepath.Join(t.TempDir(), "trustroots")
	build := exec.Command("go", append(append([]string{"build"}, ociimage.GoBuildFlags...), "-o", bin, "./testdata/trustroots")...)
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	binary, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	img, err := ociimage.Assemble(binary, ociimage.Options{Entrypoint: "/trustroots"})
	if err != nil {
		t.Fatal(err)
	}
	b := t.TempDir()
	if err := unpack(img, filepath.Join(b, "rootfs")); err != nil {
		t.Fatal(err)
	}
	s, err := defaultSpec(b)
	if err != nil {
		t.Fatal(err)
	}
	proc := s.obj("process")
	proc["terminal"] = false
	proc["args"] = []string{"/trustroots", base64.StdEncoding.EncodeToString(isrgRootX1(t))}
	proc["env"] = []string{"PATH=/"} // no SSL_CERT_FILE, no SSL_CERT_DIR
	proc["user"] = map[string]any{"uid": 65532, "gid": 65532}
	s["root"] = map[string]any{"path": "rootfs", "readonly": true}
	s.obj("linux")["cgroupsPath"] = "/" + containerID() + "-catrust"
	if err := s.write(b); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("runc", "--root", filepath.Join(b, "runc-state"), "run", "--bundle", b, containerID()+"-catrust").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "verified against the system roots") {
		t.Errorf("a Go binary in the image does not trust a public root: %v\n%s", err, out)
	}
}

// isrgRootX1 is Let's Encrypt's root, from the Mozilla bundle.
func isrgRootX1(t *testing.T) []byte {
	t.Helper()
	for r := range bundle.Roots() {
		c, err := x509.ParseCertificate(r.Certificate)
		if err == nil && c.Subject.CommonName == "ISRG Root X1" {
			return r.Certificate
		}
	}
	t.Fatal("the Mozilla bundle has no ISRG Root X1")
	return nil
}
