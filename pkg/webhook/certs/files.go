package certs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// The file names in the CertDir, those controller-runtime's webhook server
// (webhook.Options.CertName and KeyName) and certwatcher read by default.
const (
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
)

// dataLink is the symbolic link in the CertDir that points at the directory
// holding the current pair; CertFile and KeyFile link through it, the way
// the kubelet lays out a mounted Secret. Renaming a new link over it swaps
// both files in one step, so a reader never sees a partly written file and
// the pair at rest always belongs together. The old directory is removed
// right after, which raises the file events certwatcher reloads on. A
// reader that opens the files during a swap can fail to find one, or load
// the certificate of one pair with the key of the next (tls.X509KeyPair
// then fails); certwatcher keeps serving the certificate it has and reads
// the new pair on those events.
const dataLink = "..data"

// writePair writes certPEM and keyPEM into dir atomically: into a new
// directory first, then swapped in by renaming dataLink, then the previous
// directory is removed.
func writePair(dir string, certPEM, keyPEM []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write serving certificate: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, "..certs-")
	if err != nil {
		return fmt.Errorf("write serving certificate: %w", err)
	}
	if err := errors.Join(
		writeFile(filepath.Join(tmp, CertFile), certPEM, 0o644),
		writeFile(filepath.Join(tmp, KeyFile), keyPEM, 0o600),
	); err != nil {
		return fmt.Errorf("write serving certificate: %w", errors.Join(err, os.RemoveAll(tmp)))
	}
	old, _ := os.Readlink(filepath.Join(dir, dataLink))
	if err := relink(dir, dataLink, filepath.Base(tmp)); err != nil {
		return fmt.Errorf("write serving certificate: %w", errors.Join(err, os.RemoveAll(tmp)))
	}
	for _, name := range []string{CertFile, KeyFile} {
		if err := relink(dir, name, filepath.Join(dataLink, name)); err != nil {
			return fmt.Errorf("write serving certificate: %w", err)
		}
	}
	if old != "" && old != filepath.Base(tmp) && filepath.Base(old) == old {
		if err := os.RemoveAll(filepath.Join(dir, old)); err != nil {
			return fmt.Errorf("remove previous serving certificate: %w", err)
		}
	}
	return nil
}

// relink makes dir/name a symbolic link to target by renaming a new link
// over it, unless it already is one.
func relink(dir, name, target string) error {
	path := filepath.Join(dir, name)
	if cur, err := os.Readlink(path); err == nil && cur == target {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func writeFile(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	return errors.Join(werr, f.Sync(), f.Close())
}

// readPair reads the pair in dir; a missing file wraps fs.ErrNotExist.
func readPair(dir string) (*keyPair, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, CertFile))
	if err != nil {
		return nil, fmt.Errorf("read serving certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, KeyFile))
	if err != nil {
		return nil, fmt.Errorf("read serving certificate: %w", err)
	}
	kp, err := parseKeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("read serving certificate in %s: %w", dir, err)
	}
	return kp, nil
}
