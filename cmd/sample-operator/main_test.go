package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func TestBadFlags(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		mention string
	}{
		{[]string{"--max-concurrent-reconciles", "0"}, "--max-concurrent-reconciles is 0"},
		{[]string{"-v", "3"}, "-v is 3"},
		{[]string{"--local", "--kubeconfig", "x"}, "exclude each other"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"--no-such-flag"}, "no-such-flag"},
		{[]string{"--metrics-bind-address", "8080", "--kubeconfig", "testdata/unreachable.kubeconfig"}, `Metrics.BindAddress "8080"`},
	} {
		err := run(t.Context(), tt.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("run(%q) = %v, want an error mentioning %q", tt.args, err, tt.mention)
		}
	}
}

// An unreachable cluster fails at once, naming its address.
func TestUnreachableCluster(t *testing.T) {
	start := time.Now()
	err := run(t.Context(), []string{"--kubeconfig", "testdata/unreachable.kubeconfig"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "https://127.0.0.1:1") || !strings.Contains(err.Error(), "does not answer") {
		t.Errorf("run = %v, want an error naming the cluster that does not answer", err)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("took %v to give up", d)
	}
}

// TestLocal drives 'make run': the operator starts a control plane with the
// samples, says how to watch it, and the sample Mirror's copies appear.
func TestLocal(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, []string{"--local", "--local-dir", dir, "--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0"}, pw, io.Discard)
		pw.CloseWithError(err)
		done <- err
	}()
	var printed strings.Builder
	lines := bufio.NewScanner(pr)
	for !strings.Contains(printed.String(), "Press Ctrl-C") {
		if !lines.Scan() {
			t.Fatalf("run ended before it was ready (err %v); it printed:\n%s", lines.Err(), printed.String())
		}
		printed.WriteString(lines.Text() + "\n")
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	for _, want := range []string{"export KUBECONFIG=" + kubeconfig, "get mirrors -A", "label namespace team-b team=a"} {
		if !strings.Contains(printed.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, printed.String())
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	deadline := time.Now().Add(30 * time.Second)
	for _, ns := range []string{"team-a-web", "team-a-api"} {
		for {
			if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "ca-bundle", metav1.GetOptions{}); err == nil {
				break
			} else if time.Now().After(deadline) {
				t.Fatalf("no copy in %s: %v", ns, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run = %v after Ctrl-C", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("run did not stop within a minute of Ctrl-C")
	}
	if _, err := os.Stat(kubeconfig); !os.IsNotExist(err) {
		t.Errorf("the kubeconfig of the stopped control plane is still there (stat: %v)", err)
	}
}
