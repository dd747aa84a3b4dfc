// Command trustroots verifies the certificate whose DER is its argument,
// base64, against the system roots alone (x509.SystemCertPool, as any Go
// TLS client does with no RootCAs), and exits 1 saying why if it cannot.
package main

import (
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"os"
)

func main() {
	if err := verify(os.Args[1]); err != nil {
		fmt.Println("trustroots:", err)
		os.Exit(1)
	}
	fmt.Println("trustroots: verified against the system roots")
}

func verify(b64 string) error {
	der, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return err
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		return fmt.Errorf("load the system roots: %w", err)
	}
	_, err = cert.Verify(x509.VerifyOptions{Roots: roots})
	return err
}
