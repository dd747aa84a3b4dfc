package certs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func testPair(t *testing.T) *keyPair {
	t.Helper()
	kp, err := newCA(time.Now(), time.Hour, "pair")
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

func TestWritePairSwapsBothFilesAtOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "serving-certs")
	first, second := testPair(t), testPair(t)
	if err := writePair(dir, first.certPEM, first.keyPEM); err != nil {
		t.Fatal(err)
	}
	firstData, err := os.Readlink(filepath.Join(dir, dataLink))
	if err != nil {
		t.Fatal(err)
	}
	if err := writePair(dir, second.certPEM, second.keyPEM); err != nil {
		t.Fatal(err)
	}
	got, err := readPair(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !got.cert.Equal(second.cert) {
		t.Error("readPair after the second write returned the first certificate")
	}
	for _, name := range []string{CertFile, KeyFile} {
		if target, err := os.Readlink(filepath.Join(dir, name)); err != nil || target != filepath.Join(dataLink, name) {
			t.Errorf("%s links to %q (%v), want %s", name, target, err, filepath.Join(dataLink, name))
		}
	}
	if _, err := os.Stat(filepath.Join(dir, firstData)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the first pair's directory %s is still there: %v", firstData, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 4 { // ..data, its directory, tls.crt, tls.key
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the CertDir holds %v, want ..data, one directory and the two links", names)
	}
	info, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", info.Mode().Perm())
	}
}

// A reader of either file while the pair is replaced sees one whole
// version of it, never a partly written file. (It may find none for an
// instant: the link it followed can lead to the directory just removed.)
func TestWritePairReaderNeverSeesAPartialFile(t *testing.T) {
	dir := t.TempDir()
	pairs := []*keyPair{testPair(t), testPair(t)}
	if err := writePair(dir, pairs[0].certPEM, pairs[0].keyPEM); err != nil {
		t.Fatal(err)
	}
	whole := map[string]bool{}
	for _, p := range pairs {
		whole[string(p.certPEM)], whole[string(p.keyPEM)] = true, true
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, name := range []string{CertFile, KeyFile} {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				b, err := os.ReadFile(filepath.Join(dir, name))
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				if err != nil || !whole[string(b)] {
					t.Errorf("read %s during rotation: %d bytes that are no written version (err %v)", name, len(b), err)
					return
				}
			}
		})
	}
	for i := range 200 {
		p := pairs[i%2]
		if err := writePair(dir, p.certPEM, p.keyPEM); err != nil {
			t.Fatal(err)
		}
		got, err := readPair(dir)
		if err != nil || !got.cert.Equal(p.cert) {
			t.Fatalf("after write %d the pair at rest is not the one written: %v", i, err)
		}
	}
	close(stop)
	wg.Wait()
}

// A CertDir that holds plain files (a mounted Secret once, or an older
// layout) is taken over.
func TestWritePairReplacesPlainFiles(t *testing.T) {
	dir := t.TempDir()
	old, next := testPair(t), testPair(t)
	if err := errors.Join(
		os.WriteFile(filepath.Join(dir, CertFile), old.certPEM, 0o644),
		os.WriteFile(filepath.Join(dir, KeyFile), old.keyPEM, 0o600),
	); err != nil {
		t.Fatal(err)
	}
	if err := writePair(dir, next.certPEM, next.keyPEM); err != nil {
		t.Fatal(err)
	}
	got, err := readPair(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !got.cert.Equal(next.cert) {
		t.Error("the plain files were not replaced")
	}
}

func TestReadPairMissing(t *testing.T) {
	if _, err := readPair(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("readPair of an empty directory: %v, want fs.ErrNotExist", err)
	}
}
