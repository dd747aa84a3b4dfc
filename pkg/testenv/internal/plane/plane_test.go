package plane

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A program that exits before it is healthy is reported with the end of
// its output, which says why, rather than after the whole start timeout.
func TestStartQuotesAProgramThatExits(t *testing.T) {
	dir := t.TempDir()
	etcd := filepath.Join(dir, "etcd")
	script := "#!/bin/sh\necho 'etcd: --unsafe-no-fsync: unknown flag' >&2\nexit 3\n"
	if err := os.WriteFile(etcd, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Start(Options{APIServer: "/nonexistent", Etcd: etcd, CertDir: dir, StartTimeout: time.Hour, StopTimeout: time.Second})
	if err == nil {
		t.Fatal("Start succeeded with an etcd that exits")
	}
	for _, want := range []string{"etcd exited before it was healthy", "exit status 3", "--unsafe-no-fsync: unknown flag"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestTailBufferKeepsTheEnd(t *testing.T) {
	var b tailBuffer
	for i := range 1000 {
		_, _ = b.Write([]byte(strings.Repeat("x", 9) + string(rune('a'+i%26))))
	}
	_, _ = b.Write([]byte("THE END"))
	got := b.String()
	if len(got) != tailSize || !strings.HasSuffix(got, "THE END") {
		t.Errorf("tail = %d bytes ending %q, want %d ending with the last write", len(got), got[max(0, len(got)-10):], tailSize)
	}
}
