package main

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// 'make run' with a port taken fails before it starts a control plane,
// naming the flag that moves the port and where make run sets it.
func TestLocalRefusesATakenPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().String()
	_, port, _ := net.SplitHostPort(taken)
	free := []string{"--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0"}
	for _, tt := range []struct {
		flag string
		args []string
	}{
		{"--metrics-bind-address", append(free, "--metrics-bind-address", taken)},
		{"--health-probe-bind-address", append(free, "--health-probe-bind-address", taken)},
		{"--webhook-port", append(free, "--webhook-port", port)},
	} {
		t.Run(tt.flag, func(t *testing.T) {
			dir := t.TempDir()
			var out strings.Builder
			err := run(t.Context(), append([]string{"--local", "--local-dir", dir}, tt.args...), &out, io.Discard)
			if err == nil || !strings.Contains(err.Error(), "choose another with "+tt.flag) || !strings.Contains(err.Error(), "RUN_FLAGS") || !strings.Contains(err.Error(), taken) {
				t.Errorf("run = %v, want an error naming %s, RUN_FLAGS and %s", err, tt.flag, taken)
			}
			if strings.Contains(out.String(), "Starting") {
				t.Errorf("it started a control plane first:\n%s", out.String())
			}
			if _, err := os.Stat(filepath.Join(dir, "kubeconfig")); !os.IsNotExist(err) {
				t.Errorf("it wrote a kubeconfig (stat: %v)", err)
			}
		})
	}
}
