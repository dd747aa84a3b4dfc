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

func TestFormatFeatureGates(t *testing.T) {
	tests := []struct {
		gates   map[string]bool
		want    string
		wantErr string
	}{
		{gates: nil, want: ""},
		{gates: map[string]bool{"ShardedListAndWatch": true}, want: "ShardedListAndWatch=true"},
		{gates: map[string]bool{"Zeta": false, "Alpha": true}, want: "Alpha=true,Zeta=false"},
		{gates: map[string]bool{"": true}, wantErr: `feature gate name ""`},
		{gates: map[string]bool{"A=true,B": true}, wantErr: `feature gate name "A=true,B"`},
	}
	for _, tt := range tests {
		got, err := FormatFeatureGates(tt.gates)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("FormatFeatureGates(%v) err = %v, want one saying %q", tt.gates, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("FormatFeatureGates(%v) = %q, %v, want %q", tt.gates, got, err, tt.want)
		}
	}
}
