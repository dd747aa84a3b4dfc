package ociimage

import (
	"bytes"
	"encoding/pem"
	"fmt"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// CABundle is where the image holds the trusted roots: the path Go's
// crypto/x509 (SystemCertPool), OpenSSL and Debian's ca-certificates read
// on Linux, and the distroless base's.
const CABundle = "/etc/ssl/certs/ca-certificates.crt"

// caBundle is the PEM bundle of the Mozilla roots of
// golang.org/x/crypto/x509roots/fallback, at the version this module's
// go.mod pins: built from the module cache, with no network and no
// distribution package. The roots whose trust the NSS store limits
// (a distrust-after date) are left out, since a PEM file cannot carry
// the limit and would trust them without it.
func caBundle() ([]byte, error) {
	var buf bytes.Buffer
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		if err := pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate}); err != nil {
			return nil, fmt.Errorf("encode the CA bundle: %w", err)
		}
	}
	return buf.Bytes(), nil
}
