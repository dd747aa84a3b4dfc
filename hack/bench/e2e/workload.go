package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
)

// runLabel marks the namespaces a run's Mirrors select.
const runLabel = "bench.opkit.dev/run"

var mirrors = v1alpha1.GroupVersion.WithResource("mirrors")

// workload is one run's objects: sources and Mirrors in home, copies in
// namespaces. Every run has fresh names: envtest runs no namespace
// controller, so a deleted namespace stays Terminating.
type workload struct {
	cs         kubernetes.Interface
	dyn        dynamic.Interface
	run        string // unique per run, used in every name
	namespaces int
	sources    int
	payload    string // bulk in every source, so that copies weigh something
}

func (w *workload) home() string { return "bench-" + w.run }

func (w *workload) namespace(i int) string { return fmt.Sprintf("bench-%s-%02d", w.run, i) }

func (w *workload) source(i int) string { return fmt.Sprintf("src-%02d", i) }

func (w *workload) copies() int { return w.namespaces * w.sources }

// sourceData is the content of source i at version v.
func (w *workload) sourceData(i, v int) map[string]string {
	return map[string]string{"version": fmt.Sprintf("v%d-%d", v, i), "payload": w.payload}
}

// create creates the home namespace, the selected namespaces, the sources
// and their Mirrors, as a user would: one request at a time.
func (w *workload) create(ctx context.Context) error {
	nss := []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: w.home()}}}
	for i := range w.namespaces {
		nss = append(nss, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			// Each accepts the copies of the home namespace's Mirrors.
			Name: w.namespace(i), Labels: map[string]string{runLabel: w.run, mirror.AcceptLabel(w.home()): "true"},
		}})
	}
	for _, ns := range nss {
		if _, err := w.cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create namespace: %w", err)
		}
	}
	for i := range w.sources {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.source(i)}, Data: w.sourceData(i, 1)}
		if _, err := w.cs.CoreV1().ConfigMaps(w.home()).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create source: %w", err)
		}
	}
	for i := range w.sources {
		if _, err := w.dyn.Resource(mirrors).Namespace(w.home()).Create(ctx, w.mirror(i), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create Mirror: %w", err)
		}
	}
	return nil
}

// createSource creates source i and its Mirror.
func (w *workload) createSource(ctx context.Context, i int) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.source(i)}, Data: w.sourceData(i, 1)}
	if _, err := w.cs.CoreV1().ConfigMaps(w.home()).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create source: %w", err)
	}
	if _, err := w.dyn.Resource(mirrors).Namespace(w.home()).Create(ctx, w.mirror(i), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Mirror: %w", err)
	}
	return nil
}

// updateSource writes version v into source i, whatever its version: the
// driver is the only writer of the sources.
func (w *workload) updateSource(ctx context.Context, i, v int) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.source(i), Namespace: w.home()}, Data: w.sourceData(i, v)}
	if _, err := w.cs.CoreV1().ConfigMaps(w.home()).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update source: %w", err)
	}
	return nil
}

func (w *workload) mirror(i int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "Mirror",
		"metadata":   map[string]any{"name": w.source(i), "namespace": w.home()},
		"spec": map[string]any{
			"source":            map[string]any{"kind": v1alpha1.KindConfigMap, "name": w.source(i)},
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{runLabel: w.run}},
		},
	}}
}

// update writes version v into every source.
func (w *workload) update(ctx context.Context, v int) error {
	for i := range w.sources {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.source(i), Namespace: w.home()}, Data: w.sourceData(i, v)}
		// An update without a resourceVersion: the driver is the only
		// writer of the sources.
		cur, err := w.cs.CoreV1().ConfigMaps(w.home()).Get(ctx, cm.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("get source: %w", err)
		}
		cm.ResourceVersion = cur.ResourceVersion
		if _, err := w.cs.CoreV1().ConfigMaps(w.home()).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update source: %w", err)
		}
	}
	return nil
}

// converged reports which copies in l hold version v of their source, by
// namespace/name.
func (w *workload) converged(items []corev1.ConfigMap, v int) map[string]bool {
	ok := map[string]bool{}
	for i := range items {
		ok[items[i].Namespace+"/"+items[i].Name] = w.current(&items[i], v)
	}
	return ok
}

// current reports whether c is a copy of this run holding version v of its
// source.
func (w *workload) current(c *corev1.ConfigMap, v int) bool {
	i := slices.IndexFunc(w.sourceNames(), func(n string) bool { return n == c.Name })
	return i >= 0 && strings.HasPrefix(c.Namespace, "bench-"+w.run+"-") &&
		c.Data["version"] == w.sourceData(i, v)["version"] && c.Data["payload"] == w.payload
}

func (w *workload) sourceNames() []string {
	out := make([]string, w.sources)
	for i := range out {
		out[i] = w.source(i)
	}
	return out
}

func count(ok map[string]bool) int {
	n := 0
	for _, b := range ok {
		if b {
			n++
		}
	}
	return n
}

// errNotConverged is the error of a phase whose copies did not converge
// in time.
var errNotConverged = errors.New("copies not converged")

// waitConverged waits until every copy holds version v, as a list from the
// API server shows. Between lists it follows a watch of the copies rather
// than polling: lists of thousands of copies would load the API server the
// implementations share.
func (w *workload) waitConverged(ctx context.Context, v int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("%w to version %d within %v", errNotConverged, v, timeout))
	defer cancel()
	opts := metav1.ListOptions{LabelSelector: mirror.LabelMirrorNamespace + "=" + w.home()}
	last := 0
	for {
		l, err := w.cs.CoreV1().ConfigMaps("").List(ctx, opts)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%w (%d of %d)", context.Cause(ctx), last, w.copies())
			}
			return fmt.Errorf("list the copies: %w", err)
		}
		ok := w.converged(l.Items, v)
		if last = count(ok); last == w.copies() {
			return nil
		}
		wopts := opts
		wopts.ResourceVersion, wopts.AllowWatchBookmarks = l.ResourceVersion, true
		wi, err := w.cs.CoreV1().ConfigMaps("").Watch(ctx, wopts)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%w (%d of %d)", context.Cause(ctx), last, w.copies())
			}
			return fmt.Errorf("watch the copies: %w", err)
		}
		for e := range wi.ResultChan() {
			c, isCM := e.Object.(*corev1.ConfigMap)
			if !isCM || e.Type == watch.Bookmark {
				continue
			}
			// Counted as it changes: a count of the map per event would
			// cost the driver O(copies²) over a phase.
			key, now := c.Namespace+"/"+c.Name, e.Type != watch.Deleted && w.current(c, v)
			switch was := ok[key]; {
			case now && !was:
				last++
			case was && !now:
				last--
			}
			ok[key] = now
			if last == w.copies() {
				break // and verify with a list
			}
		}
		wi.Stop()
	}
}

// clean deletes what the run created, so that the next run's operator does
// not cache it: the Mirrors (releasing their finalizers, as no operator
// runs any more), the copies, the sources, then the namespaces, which stay
// Terminating but empty.
func (w *workload) clean(ctx context.Context) error {
	nss := []string{w.home()}
	for i := range w.namespaces {
		nss = append(nss, w.namespace(i))
	}
	return w.cleanNamespaces(ctx, w.home(), nss)
}

// cleanNamespaces deletes the Mirrors in home, then every ConfigMap in
// nss and nss themselves.
func (w *workload) cleanNamespaces(ctx context.Context, home string, nss []string) error {
	var errs []error
	ms, err := w.dyn.Resource(mirrors).Namespace(home).List(ctx, metav1.ListOptions{})
	if err != nil {
		errs = append(errs, err)
	} else {
		for _, m := range ms.Items {
			_, err := w.dyn.Resource(mirrors).Namespace(home).Patch(ctx, m.GetName(), types.MergePatchType,
				[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			errs = append(errs, ignoreNotFound(err))
		}
		errs = append(errs, w.dyn.Resource(mirrors).Namespace(home).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}))
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for _, ns := range nss {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			err := errors.Join(
				w.cs.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}),
				ignoreNotFound(w.cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})),
			)
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("clean run %s: %w", w.run, err)
	}
	return nil
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
