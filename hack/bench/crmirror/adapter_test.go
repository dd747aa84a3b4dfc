package main

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/reconcile"

	opkit "github.com/opkit-dev/opkit/pkg/reconcile"
)

func TestAdapter(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name         string
		res          opkit.Result
		err          error
		want         ctrl.Result
		wantErr      error
		wantTerminal bool
	}{
		{name: "done", res: opkit.Done(), want: ctrl.Result{}},
		{name: "requeue after", res: opkit.RequeueAfter(time.Minute), want: ctrl.Result{RequeueAfter: time.Minute}},
		//lint:ignore SA1019 the rate-limited requeue is what the adapter maps to.
		{name: "requeue with backoff", res: opkit.RequeueWithBackoff(), want: ctrl.Result{Requeue: true}},
		{name: "error", res: opkit.Done(), err: boom, wantErr: boom},
		{name: "terminal", res: opkit.Done(), err: opkit.Terminal(boom), wantErr: boom, wantTerminal: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got opkit.Request
			a := adapter{opkit.Func[opkit.Request](func(_ context.Context, req opkit.Request) (opkit.Result, error) {
				got = req
				return tc.res, tc.err
			})}
			res, err := a.Reconcile(t.Context(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "m"}})
			if got != (opkit.Request{Namespace: "ns", Name: "m"}) {
				t.Errorf("the reconciler got %v, want ns/m", got)
			}
			if res != tc.want {
				t.Errorf("result %+v, want %+v", res, tc.want)
			}
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
			if terminal := errors.Is(err, ctrl.TerminalError(nil)); terminal != tc.wantTerminal {
				t.Errorf("error %v: terminal for controller-runtime %v, want %v", err, terminal, tc.wantTerminal)
			}
		})
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr bool
	}{
		{args: nil},
		{args: []string{"--kubeconfig", "x", "--max-concurrent-reconciles", "8"}},
		{args: []string{"--max-concurrent-reconciles", "0"}, wantErr: true},
		{args: []string{"extra"}, wantErr: true},
	} {
		if _, err := parse(tc.args, io.Discard); (err != nil) != tc.wantErr {
			t.Errorf("parse(%q) error %v, want an error: %v", tc.args, err, tc.wantErr)
		}
	}
}
