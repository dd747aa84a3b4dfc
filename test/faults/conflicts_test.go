package faults

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	imetrics "github.com/opkit-dev/opkit/internal/metrics"
)

// External writers edit copies while a user edits the source and someone
// else edits an unowned object of the source's name. Afterwards every copy
// equals the source, and the last write of the others to what the
// operator does not own (the source, the unowned object) is what is there.
func TestConflictsWithExternalWriters(t *testing.T) {
	const (
		window = 5 * time.Second
		rounds = 200 // per writer, at most
	)
	w := newWorld(t)
	nss := w.namespaces(6)
	unowned, copies := nss[0], nss[1:]
	w.configMap(unowned, "cfg", map[string]string{"owner": "them", "n": "0"})
	op := startOperator(t, opOptions{workers: 4})
	w.configMap(w.home, "cfg", map[string]string{"v": "0"})
	m := w.mirror("cfg", "cfg", w.selector())
	w.eventually("the first copies", w.copiesEqual(copies, "cfg", map[string]string{"v": "0"}))

	ctx, cancel := context.WithTimeout(t.Context(), window)
	defer cancel()
	var (
		wg                    sync.WaitGroup
		lastSource, lastTheir map[string]string
		tampered              atomic.Int64
	)
	// The user edits the source.
	wg.Go(func() {
		for i := 1; i <= rounds && ctx.Err() == nil; i++ {
			d := map[string]string{"v": fmt.Sprint(i)}
			if err := w.setData(w.home, "cfg", d); err != nil {
				t.Errorf("edit the source: %v", err)
				return
			}
			lastSource = d
			time.Sleep(20 * time.Millisecond)
		}
	})
	// Someone else edits their object of the same name.
	wg.Go(func() {
		for i := 1; i <= rounds && ctx.Err() == nil; i++ {
			d := map[string]string{"owner": "them", "n": fmt.Sprint(i)}
			if err := w.setData(unowned, "cfg", d); err != nil {
				t.Errorf("edit the unowned object: %v", err)
				return
			}
			lastTheir = d
			time.Sleep(20 * time.Millisecond)
		}
	})
	// Two writers tamper with copies, racing the operator's patches.
	for range 2 {
		wg.Go(func() {
			for i := 1; i <= rounds && ctx.Err() == nil; i++ {
				ns := copies[rand.IntN(len(copies))]
				err := w.setData(ns, "cfg", map[string]string{"v": "tampered", "i": fmt.Sprint(i)})
				if err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("tamper with %s/cfg: %v", ns, err)
					return
				}
				tampered.Add(1)
			}
		})
	}
	wg.Wait()
	want := maps.Clone(lastSource)
	took := w.eventually("every copy equal to the source", w.copiesEqual(copies, "cfg", want))
	conflicts := op.counter(t, imetrics.RESTClientRequests, map[string]string{"code": "409"})
	t.Logf("after %v of concurrent writes (%d tamperings, source at %v): copies converged %v later; the operator met %v conflicts (409)",
		window, tampered.Load(), want, took.Round(time.Millisecond), conflicts)

	if err := w.hasData(w.home, "cfg", want)(); err != nil {
		t.Errorf("the user's last write to the source was lost: %v", err)
	}
	if err := w.hasData(unowned, "cfg", lastTheir)(); err != nil {
		t.Errorf("the last write to the unowned object was lost: %v", err)
	}
	w.eventually("Ready=False Conflict, naming the unowned object's namespace", w.condition(m, metav1.ConditionFalse, v1alpha1.ReasonConflict))
}
