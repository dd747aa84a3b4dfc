package main

import (
	"bufio"
	"context"
	"errors"
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

// TestRun drives the program behind 'make run': it must print a usable
// kubeconfig path and a kubectl line, serve until canceled, then stop and
// remove the kubeconfig.
func TestRun(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, []string{"--kubeconfig", kubeconfig}, pw)
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
	want := "kubectl --kubeconfig " + kubeconfig + " get namespaces"
	if !strings.Contains(printed.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, printed.String())
	}

	// The kubeconfig works for any client, as it does for kubectl.
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("load printed kubeconfig: %v", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list namespaces through the kubeconfig: %v", err)
	}
	if len(nss.Items) == 0 {
		t.Error("no namespaces listed")
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run returned %v after cancel", err)
		}
	case <-time.After(60 * time.Second):
		// Only a bound against hanging; it measures nothing.
		t.Fatal("run did not stop after cancel")
	}
	if _, err := os.Stat(kubeconfig); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("kubeconfig still present after stop: %v", err)
	}
}

func TestRunBadFlag(t *testing.T) {
	err := run(t.Context(), []string{"--no-such-flag"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "no-such-flag") {
		t.Fatalf("err = %v, want one naming the unknown flag", err)
	}
}

// With --members, a hub and a member: the member's kubeconfig is written
// beside the hub's and held by a Secret on the hub, and reaches the
// member; stopping removes both kubeconfigs.
func TestRunMembers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	hubPath, memberPath := filepath.Join(dir, "hub.kubeconfig"), filepath.Join(dir, "member-1.kubeconfig")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, []string{"--kubeconfig", hubPath, "--members", "1"}, pw)
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
	if !strings.Contains(printed.String(), "KUBECONFIG="+memberPath) {
		t.Errorf("output names no member kubeconfig %s:\n%s", memberPath, printed.String())
	}

	hubCfg, err := clientcmd.BuildConfigFromFlags("", hubPath)
	if err != nil {
		t.Fatal(err)
	}
	hub, err := kubernetes.NewForConfig(hubCfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := hub.CoreV1().Secrets("fleet-system").Get(ctx, "member-1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the member's Secret on the hub: %v", err)
	}
	memberCfg, err := clientcmd.RESTConfigFromKubeConfig(s.Data["kubeconfig"])
	if err != nil {
		t.Fatal(err)
	}
	if memberCfg.Host == hubCfg.Host {
		t.Errorf("the member's kubeconfig reaches the hub, %s", hubCfg.Host)
	}
	member, err := kubernetes.NewForConfig(memberCfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := member.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Errorf("the member through its Secret's kubeconfig: %v", err)
	}
	if _, err := os.Stat(memberPath); err != nil {
		t.Errorf("the member's kubeconfig file: %v", err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run returned %v after cancel", err)
		}
	case <-time.After(60 * time.Second):
		// Only a bound against hanging; it measures nothing.
		t.Fatal("run did not stop after cancel")
	}
	for _, p := range []string{hubPath, memberPath} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still present after stop: %v", p, err)
		}
	}
}

func TestRunTooManyMembers(t *testing.T) {
	err := run(t.Context(), []string{"--members", "6"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--members is 6") {
		t.Fatalf("err = %v, want one naming --members", err)
	}
}
