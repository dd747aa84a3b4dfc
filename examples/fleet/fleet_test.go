package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// What 'make run-fleet' runs, end to end: a hub and two members, each an
// API server of its own, and the operator against the hub. The policy is
// copied into the member whose namespace opts in and not the other; a
// change follows; the other member opting in receives it; the first
// withdrawing its opt-in loses its copy; the policy deleted, every copy
// goes. A ConfigMap of the policy's name that the operator did not make
// is left untouched throughout.
func TestRunLocal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, []string{"--local", "--local-dir", dir, "--members", "2"}, pw, io.Discard)
		pw.CloseWithError(err)
		done <- err
	}()
	printed := waitPrinted(t, pr, "Press Ctrl-C")
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	for _, cluster := range []string{"hub", "member-1", "member-2"} {
		want := "KUBECONFIG=" + filepath.Join(dir, cluster+".kubeconfig")
		if !strings.Contains(printed, want) {
			t.Errorf("the walk-through names no %q:\n%s", want, printed)
		}
	}
	hub, m1, m2 := clientFor(t, dir, "hub"), clientFor(t, dir, "member-1"), clientFor(t, dir, "member-2")
	// A namespace of member-1 that opts in but holds a ConfigMap of the
	// policy's name that the operator did not make: it is left alone.
	mine := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: samplePolicy}, Data: map[string]string{"mine": "yes"}}
	if err := createNamespace(ctx, m1, "legacy", map[string]string{LabelAccept: "true"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m1.CoreV1().ConfigMaps("legacy").Create(ctx, mine, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	waitCopy(t, m1, "info")
	setPolicy(t, hub, "debug")
	waitCopy(t, m1, "debug")
	if _, err := m2.CoreV1().ConfigMaps(sampleNamespace).Get(ctx, samplePolicy, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("member-2, whose namespace did not opt in, has a copy: %v", err)
	}

	accept(t, m2, true)
	waitCopy(t, m2, "debug")
	accept(t, m1, false)
	waitCopy(t, m1, "")
	if err := hub.CoreV1().ConfigMaps("fleet-policies").Delete(ctx, samplePolicy, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCopy(t, m2, "")
	got, err := m1.CoreV1().ConfigMaps("legacy").Get(ctx, samplePolicy, metav1.GetOptions{})
	if err != nil || !maps.Equal(got.Data, mine.Data) || len(got.Labels) > 0 {
		t.Errorf("the ConfigMap the operator did not make: %v, %v; want it untouched", got, err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run returned %v after cancel", err)
		}
	case <-time.After(2 * time.Minute):
		// Only a bound against hanging; it measures nothing.
		t.Fatal("run did not stop after cancel")
	}
}

// waitPrinted reads r until a line holds want and returns what it read.
func waitPrinted(t *testing.T, r io.Reader, want string) string {
	t.Helper()
	var printed strings.Builder
	lines := bufio.NewScanner(r)
	for !strings.Contains(printed.String(), want) {
		if !lines.Scan() {
			t.Fatalf("run ended before it was ready (err %v); it printed:\n%s", lines.Err(), printed.String())
		}
		printed.WriteString(lines.Text() + "\n")
	}
	return printed.String()
}

func clientFor(t *testing.T, dir, cluster string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, cluster+".kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func setPolicy(t *testing.T, hub kubernetes.Interface, level string) {
	t.Helper()
	patch := fmt.Sprintf(`{"data":{"log-level":%q}}`, level)
	if _, err := hub.CoreV1().ConfigMaps("fleet-policies").Patch(t.Context(), samplePolicy, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func accept(t *testing.T, member kubernetes.Interface, on bool) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, LabelAccept)
	if !on {
		patch = fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, LabelAccept)
	}
	if _, err := member.CoreV1().Namespaces().Patch(t.Context(), sampleNamespace, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitCopy waits until the member's copy of the policy holds level, or,
// for "", until it has none.
func waitCopy(t *testing.T, member kubernetes.Interface, level string) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		cm, err := member.CoreV1().ConfigMaps(sampleNamespace).Get(ctx, samplePolicy, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			last = "none"
			return level == "", nil
		}
		if err != nil {
			if ctx.Err() == nil {
				last = err.Error()
			}
			return false, nil
		}
		last = fmt.Sprintf("log-level %q, labels %v", cm.Data["log-level"], cm.Labels)
		return level != "" && cm.Data["log-level"] == level && cm.Labels[LabelCopied] == "true" &&
			cm.Annotations[AnnotationSource] == "fleet-policies/"+samplePolicy, nil
	})
	if err != nil {
		want := "none"
		if level != "" {
			want = "log-level " + level
		}
		t.Fatalf("the copy in %s: %s, want %s: %v", sampleNamespace, last, want, err)
	}
}
