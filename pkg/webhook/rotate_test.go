package webhook_test

import (
	"bytes"
	"crypto/tls"
	"encoding/pem"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/opkit-dev/opkit/pkg/manager"
)

// A new certificate written to CertDir while the manager runs is served
// without a restart, as a renewed kubernetes.io/tls Secret mounted there
// would be.
func TestCertificateRotatedInCertDir(t *testing.T) {
	ns := env.Namespace(t)
	crt, key := selfSigned(t)
	dir := certDir(t, crt, key)
	port := freePort(t)
	start(t, newManager(t, ns, manager.WebhookOptions{Port: port, CertDir: dir}))
	addr := "127.0.0.1:" + strconv.Itoa(port)
	served := func() []byte {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			return nil
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Raw
	}
	old := leaf(t, crt)
	poll(t, "the first certificate to be served", func() bool { return bytes.Equal(served(), old) })

	crt2, key2 := selfSigned(t)
	for name, b := range map[string][]byte{"tls.key": key2, "tls.crt": crt2} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	renewed := leaf(t, crt2)
	poll(t, "the renewed certificate to be served", func() bool { return bytes.Equal(served(), renewed) })
}

// leaf returns the DER of the first certificate in data.
func leaf(t *testing.T, data []byte) []byte {
	t.Helper()
	b, _ := pem.Decode(data)
	if b == nil {
		t.Fatal("no certificate in the PEM")
	}
	return b.Bytes
}
