package controller_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2/textlogger"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/controller"
	"github.com/opkit-dev/opkit/pkg/queue"
	"github.com/opkit-dev/opkit/pkg/reconcile"
)

// keys is a source that queues a fixed set of keys at Start, with the
// change time changed (none if zero), and is synced once synced is closed
// (at once when it is nil).
type keys struct {
	keys    []reconcile.Request
	changed time.Time
	synced  chan struct{}
}

func (k *keys) Start(_ context.Context, q *queue.Queue[reconcile.Request]) error {
	q.AddWithOpts(queue.AddOpts{Changed: k.changed}, k.keys...)
	return nil
}

func (k *keys) WaitForSync(ctx context.Context) error {
	if k.synced == nil {
		return nil
	}
	select {
	case <-k.synced:
		return nil
	case <-ctx.Done():
		return errors.Join(errors.New("keys source not synced"), context.Cause(ctx))
	}
}

func (k *keys) String() string { return "keys source" }

func req(name string) reconcile.Request { return reconcile.Request{Namespace: "ns", Name: name} }

// call is one Reconcile call, as the reconciler saw it.
type call struct {
	key reconcile.Request
	at  time.Duration // since the test began, on the bubble's clock
}

// recording is a reconciler that records its calls and answers with do.
type recording struct {
	start time.Time
	do    func(ctx context.Context, key reconcile.Request, n int) (reconcile.Result, error)

	mu    sync.Mutex
	calls []call
}

func (r *recording) Reconcile(ctx context.Context, key reconcile.Request) (reconcile.Result, error) {
	r.mu.Lock()
	r.calls = append(r.calls, call{key, time.Since(r.start)})
	n := len(r.calls)
	r.mu.Unlock()
	return r.do(ctx, key, n)
}

func (r *recording) times() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Duration
	for _, c := range r.calls {
		out = append(out, c.at)
	}
	return out
}

// run starts a controller with the given reconciler behaviour inside a
// synctest bubble, lets the bubble's clock run for d, stops the controller
// and returns what the reconciler saw and the controller's metrics.
func run(t *testing.T, d time.Duration, opts controller.Options[reconcile.Request], src *keys,
	do func(ctx context.Context, key reconcile.Request, n int) (reconcile.Result, error)) (*recording, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	opts.Registerer = reg
	r := &recording{start: time.Now(), do: do}
	c, err := controller.New("test", reconcile.Reconciler[reconcile.Request](r), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Watch(src); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- c.Start(ctx) }()
	time.Sleep(d)
	synctest.Wait()
	cancel()
	if err := <-errc; err != nil {
		t.Errorf("Start returned %v after a clean stop", err)
	}
	return r, reg
}

func counter(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue metric
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no series %s%v", name, labels)
	return 0
}

func ms(n ...int) []time.Duration {
	out := make([]time.Duration, len(n))
	for i, v := range n {
		out[i] = time.Duration(v) * time.Millisecond
	}
	return out
}

func TestResultPaths(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name    string
		opts    controller.Options[reconcile.Request]
		do      func(ctx context.Context, key reconcile.Request, n int) (reconcile.Result, error)
		times   []time.Duration // when the reconciler was called
		results map[string]float64
		errors  float64
		other   map[string]float64 // other counters by name
	}{{
		name:    "done is reconciled once",
		do:      func(context.Context, reconcile.Request, int) (reconcile.Result, error) { return reconcile.Done(), nil },
		times:   ms(0),
		results: map[string]float64{imetrics.ResultSuccess: 1},
	}, {
		name: "an error is retried with exponential backoff",
		do: func(_ context.Context, _ reconcile.Request, n int) (reconcile.Result, error) {
			if n <= 3 {
				return reconcile.Done(), boom
			}
			return reconcile.Done(), nil
		},
		times:   ms(0, 5, 15, 35), // 5ms, then 10ms, then 20ms
		results: map[string]float64{imetrics.ResultError: 3, imetrics.ResultSuccess: 1},
		errors:  3,
	}, {
		name: "a terminal error is not retried",
		do: func(context.Context, reconcile.Request, int) (reconcile.Result, error) {
			return reconcile.Done(), reconcile.Terminal(boom)
		},
		times:   ms(0),
		results: map[string]float64{imetrics.ResultError: 1},
		errors:  1,
		other:   map[string]float64{imetrics.TerminalReconcileErrors: 1},
	}, {
		name: "requeue after a delay",
		do: func(_ context.Context, _ reconcile.Request, n int) (reconcile.Result, error) {
			if n < 3 {
				return reconcile.RequeueAfter(time.Second), nil
			}
			return reconcile.Done(), nil
		},
		times:   ms(0, 1000, 2000),
		results: map[string]float64{imetrics.ResultRequeueAfter: 2, imetrics.ResultSuccess: 1},
	}, {
		name: "requeue with backoff",
		do: func(_ context.Context, _ reconcile.Request, n int) (reconcile.Result, error) {
			if n < 3 {
				return reconcile.RequeueWithBackoff(), nil
			}
			return reconcile.Done(), nil
		},
		times:   ms(0, 5, 15),
		results: map[string]float64{imetrics.ResultRequeue: 2, imetrics.ResultSuccess: 1},
	}, {
		// A mechanical port of controller-runtime's Result{RequeueAfter: d}
		// with a d computed as zero or less (time.Until a past deadline)
		// must finish there, as it does on controller-runtime, not requeue
		// with backoff forever.
		name: "requeue after zero is done",
		do: func(context.Context, reconcile.Request, int) (reconcile.Result, error) {
			return reconcile.RequeueAfter(0), nil
		},
		times:   ms(0),
		results: map[string]float64{imetrics.ResultSuccess: 1},
	}, {
		name: "requeue after a negative delay is done",
		do: func(context.Context, reconcile.Request, int) (reconcile.Result, error) {
			return reconcile.RequeueAfter(-time.Minute), nil
		},
		times:   ms(0),
		results: map[string]float64{imetrics.ResultSuccess: 1},
	}, {
		name: "a requeue after a delay resets the backoff",
		do: func(_ context.Context, _ reconcile.Request, n int) (reconcile.Result, error) {
			switch n {
			case 1, 2, 4:
				return reconcile.Done(), boom
			case 3:
				return reconcile.RequeueAfter(time.Second), nil
			}
			return reconcile.Done(), nil
		},
		times:   ms(0, 5, 15, 1015, 1020),
		results: map[string]float64{imetrics.ResultError: 3, imetrics.ResultRequeueAfter: 1, imetrics.ResultSuccess: 1},
		errors:  3,
	}, {
		name: "a panic is recovered, counted and retried with backoff",
		do: func(_ context.Context, _ reconcile.Request, n int) (reconcile.Result, error) {
			if n == 1 {
				panic("nil map")
			}
			return reconcile.Done(), nil
		},
		times:   ms(0, 5),
		results: map[string]float64{imetrics.ResultError: 1, imetrics.ResultSuccess: 1},
		errors:  1,
		other:   map[string]float64{imetrics.ReconcilePanics: 1},
	}, {
		name: "a timeout ends the context, is counted and retried",
		opts: controller.Options[reconcile.Request]{ReconcileTimeout: time.Second},
		do: func(ctx context.Context, _ reconcile.Request, n int) (reconcile.Result, error) {
			if n == 1 {
				<-ctx.Done()
				if !errors.Is(context.Cause(ctx), controller.ErrReconcileTimeout) {
					return reconcile.Done(), reconcile.Terminal(errors.New("wrong cause"))
				}
				return reconcile.Done(), context.Cause(ctx)
			}
			return reconcile.Done(), nil
		},
		times:   ms(0, 1005),
		results: map[string]float64{imetrics.ResultError: 1, imetrics.ResultSuccess: 1},
		errors:  1,
		other:   map[string]float64{imetrics.ReconcileTimeouts: 1},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r, reg := run(t, time.Hour, tt.opts, &keys{keys: []reconcile.Request{req("a")}}, tt.do)
				if diff := cmp.Diff(tt.times, r.times()); diff != "" {
					t.Errorf("reconcile times (-want +got):\n%s", diff)
				}
				for _, result := range []string{imetrics.ResultSuccess, imetrics.ResultError, imetrics.ResultRequeue, imetrics.ResultRequeueAfter} {
					if got := counter(t, reg, imetrics.ReconcileTotal, "controller", "test", "result", result); got != tt.results[result] {
						t.Errorf("%s{result=%q} = %v, want %v", imetrics.ReconcileTotal, result, got, tt.results[result])
					}
				}
				if got := counter(t, reg, imetrics.ReconcileErrors); got != tt.errors {
					t.Errorf("%s = %v, want %v", imetrics.ReconcileErrors, got, tt.errors)
				}
				for _, name := range []string{imetrics.TerminalReconcileErrors, imetrics.ReconcilePanics, imetrics.ReconcileTimeouts} {
					if got := counter(t, reg, name); got != tt.other[name] {
						t.Errorf("%s = %v, want %v", name, got, tt.other[name])
					}
				}
			})
		})
	}
}

// A requeue keeps the key's priority unless the Result sets one.
func TestRequeuePriority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := run(t, time.Hour, controller.Options[reconcile.Request]{}, &keys{keys: []reconcile.Request{req("b"), req("a")}},
			func(_ context.Context, key reconcile.Request, n int) (reconcile.Result, error) {
				switch {
				case n > 2:
					return reconcile.Done(), nil
				case key.Name == "a":
					return reconcile.RequeueAfter(time.Second).WithPriority(10), nil
				default:
					return reconcile.RequeueAfter(time.Second), nil
				}
			})
		var order []string
		for _, c := range r.calls {
			order = append(order, c.key.Name)
		}
		// b was queued first, but after the requeue a is served first.
		if diff := cmp.Diff([]string{"b", "a", "a", "b"}, order); diff != "" {
			t.Errorf("order (-want +got):\n%s", diff)
		}
	})
}

// Each reconcile's context carries the logger, with the controller, the
// key and the reconcile ID, and the ID itself.
func TestReconcileContext(t *testing.T) {
	var mu sync.Mutex
	var buf bytes.Buffer
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		buf.WriteString(args + "\n")
	}, funcr.Options{Verbosity: 1})
	synctest.Test(t, func(t *testing.T) {
		var ids []string
		run(t, time.Second, controller.Options[reconcile.Request]{Logger: log}, &keys{keys: []reconcile.Request{req("a")}},
			func(ctx context.Context, _ reconcile.Request, n int) (reconcile.Result, error) {
				ids = append(ids, controller.ReconcileID(ctx))
				logr.FromContextOrDiscard(ctx).Info("Hello")
				return reconcile.Done(), nil
			})
		if len(ids) != 1 || len(ids[0]) != 36 {
			t.Fatalf("reconcile IDs = %q, want one UUID", ids)
		}
		mu.Lock()
		defer mu.Unlock()
		want := `"msg"="Hello" "controller"="test" "namespace"="ns" "name"="a" "reconcileID"="` + ids[0] + `"`
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, buf.String())
		}
	})
	if controller.ReconcileID(t.Context()) != "" {
		t.Error("ReconcileID outside a reconcile is not empty")
	}
}

// The reconcile's logger prints its key and ID as strings through every
// kind of sink: slog's text and JSON handlers, and controller-runtime's
// log.FromContext finds it too.
func TestReconcileLoggerSinks(t *testing.T) {
	var text, jsonOut, klogOut bytes.Buffer
	sinks := []struct {
		name string
		log  logr.Logger
		buf  *bytes.Buffer
		want string
	}{
		{"slog text", logr.FromSlogHandler(slog.NewTextHandler(&text, nil)), &text, `msg=Hello controller=test namespace=ns name=a reconcileID=%s`},
		{"slog JSON", logr.FromSlogHandler(slog.NewJSONHandler(&jsonOut, nil)), &jsonOut, `"msg":"Hello","controller":"test","namespace":"ns","name":"a","reconcileID":"%s"`},
		// klog's text format: the manager's default logger.
		{"klog text", textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&klogOut))), &klogOut, `"Hello" controller="test" namespace="ns" name="a" reconcileID="%s"`},
	}
	for _, sink := range sinks {
		synctest.Test(t, func(t *testing.T) {
			var id string
			run(t, time.Second, controller.Options[reconcile.Request]{Logger: sink.log}, &keys{keys: []reconcile.Request{req("a")}},
				func(ctx context.Context, _ reconcile.Request, n int) (reconcile.Result, error) {
					id = controller.ReconcileID(ctx)
					ctrllog.FromContext(ctx).Info("Hello")
					return reconcile.Done(), nil
				})
			if want := fmt.Sprintf(sink.want, id); !strings.Contains(sink.buf.String(), want) {
				t.Errorf("%s: log lacks %s:\n%s", sink.name, want, sink.buf.String())
			}
		})
	}
}

// One key is never reconciled by two workers at once, while different keys
// are reconciled in parallel up to MaxConcurrentReconciles. Spare workers,
// which may add one more reconcile of this one tenant, are off here;
// TestSpareWorkersBound counts them.
func TestConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		running, most := map[string]int{}, 0
		total := 0
		var ks []reconcile.Request
		for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
			ks = append(ks, req(n))
		}
		run(t, time.Hour, controller.Options[reconcile.Request]{MaxConcurrentReconciles: 3, SpareWorkers: -1}, &keys{keys: ks},
			func(_ context.Context, key reconcile.Request, n int) (reconcile.Result, error) {
				mu.Lock()
				running[key.Name]++
				total++
				most = max(most, total)
				if running[key.Name] > 1 {
					t.Errorf("%s reconciled twice at once", key.Name)
				}
				mu.Unlock()
				time.Sleep(time.Second)
				mu.Lock()
				running[key.Name]--
				total--
				mu.Unlock()
				if n <= 12 {
					return reconcile.RequeueWithBackoff(), nil
				}
				return reconcile.Done(), nil
			})
		if most != 3 {
			t.Errorf("at most %d reconciles ran at once, want 3", most)
		}
	})
}
