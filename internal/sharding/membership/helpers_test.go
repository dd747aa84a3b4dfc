package membership_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/opkit-dev/opkit/internal/sharding/membership"
)

const slots = 16

// ledger records, from every member's Handler, when each slot became held
// and when its release began and ended (no reconcile in flight), in real
// order (appended under one mutex).
type ledger struct {
	mu     sync.Mutex
	events []event
}

type event struct {
	who  string
	slot int
	kind kind
	at   time.Time
}

type kind int

const (
	held      kind = iota
	releasing      // dispatch stopped; reconciles may be in flight
	released       // the Release hook returned
)

func (l *ledger) add(who string, ss []int, k kind) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range ss {
		l.events = append(l.events, event{who, s, k, time.Now()})
	}
}

// handler records into l as who; release, if not nil, runs before a
// release returns.
func (l *ledger) handler(who string, release func([]int)) membership.Handler {
	return membership.HandlerFuncs{
		OnHeld: func(ss []int) { l.add(who, ss, held) },
		OnRelease: func(_ context.Context, ss []int) {
			l.add(who, ss, releasing)
			if release != nil {
				release(ss)
			}
			l.add(who, ss, released)
		},
	}
}

// overlap returns a description of the first instant two members held one
// slot, or "". A slot is held from its held event until its Release hook
// returned, since reconciles may run until then.
func (l *ledger) overlap() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	holder := map[int]string{}
	for _, e := range l.events {
		switch {
		case e.kind == held && holder[e.slot] != "":
			return fmt.Sprintf("slot %d held by %s when %s took it at %v", e.slot, holder[e.slot], e.who, e.at.Format(time.StampMicro))
		case e.kind == held:
			holder[e.slot] = e.who
		case e.kind == released && holder[e.slot] == e.who:
			delete(holder, e.slot)
		}
	}
	return ""
}

// releases counts the releases begun.
func (l *ledger) releases() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.events {
		if e.kind == releasing {
			n++
		}
	}
	return n
}

// released returns the slots whose release others than who began after
// from, in order.
func (l *ledger) released(who string, from time.Time) []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []int
	for _, e := range l.events {
		if e.kind == releasing && e.who != who && e.at.After(from) {
			out = append(out, e.slot)
		}
	}
	return out
}

// firstHeld returns when who first came to hold slot after t, or zero.
func (l *ledger) firstHeld(who string, slot int, after time.Time) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.events {
		if e.who == who && e.slot == slot && e.kind == held && e.at.After(after) {
			return e.at
		}
	}
	return time.Time{}
}

// running is a Member whose Run runs until stop.
type running struct {
	*membership.Member
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned, with err set
	err    error
}

// stop ends Run and returns its error.
func (r *running) stop() error {
	r.cancel()
	<-r.done
	return r.err
}

// start runs a member of ns's group with identity id, timings from timing,
// recording into l.
func start(t *testing.T, cs kubernetes.Interface, ns, id string, timing membership.Options, h membership.Handler) *running {
	t.Helper()
	opts := timing
	opts.Namespace, opts.Identity, opts.Slots, opts.Handler = ns, id, slots, h
	m, err := membership.New(cs, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Member: m, cancel: cancel, done: make(chan struct{})}
	go func() {
		r.err = m.Run(ctx)
		close(r.done)
	}()
	t.Cleanup(func() { _ = r.stop() })
	return r
}

// fast timings: a dead member's slots move after 3 s.
var fast = membership.Options{LeaseDuration: 3 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}

// patient timings: no Lease expires within a test, so slots can move only
// through the protocol, never by expiry.
var patient = membership.Options{LeaseDuration: time.Hour, RenewDeadline: 50 * time.Minute, RetryPeriod: 100 * time.Millisecond}

// covered reports whether ms hold every slot, each exactly once, and each
// member between min and max slots.
func covered(ms []*running, lo, hi int) bool {
	var all []int
	for _, m := range ms {
		h := m.Held()
		if len(h) < lo || len(h) > hi {
			return false
		}
		all = append(all, h...)
	}
	slices.Sort(all)
	if len(all) != slots {
		return false
	}
	for i, s := range all {
		if s != i {
			return false
		}
	}
	return true
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// breaker is a transport the test can break: every request fails while
// broken, as across a partition.
type breaker struct {
	broken atomic.Bool
	next   http.RoundTripper
}

var errBroken = errors.New("transport broken by the test")

func (b *breaker) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.broken.Load() {
		return nil, errBroken
	}
	return b.next.RoundTrip(r)
}

// config is the control plane's, without client-side throttling: each
// member renews and lists every 100 ms.
func config() *rest.Config {
	cfg := rest.CopyConfig(env.Config())
	cfg.QPS, cfg.Burst = 1000, 1000
	return cfg
}

// clientset returns a clientset of its own, as each member has.
func clientset(t *testing.T) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(config())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// breakable returns a clientset whose requests fail while b is broken.
func breakable(t *testing.T) (kubernetes.Interface, *breaker) {
	t.Helper()
	b := &breaker{}
	cfg := config()
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		b.next = rt
		return b
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs, b
}

// gate blocks Release hooks once armed, so a test can hold slots in their
// release. Unarmed, it lets releases through: members that start one
// after another release slots to each other, and a gate shut then would
// keep them from ever covering the slots.
type gate struct {
	armed atomic.Bool
	once  sync.Once
	ch    chan struct{}
}

func newGate() *gate { return &gate{ch: make(chan struct{})} }

// wait is the Release hook's part: it returns once g is open or unarmed.
func (g *gate) wait([]int) {
	if g.armed.Load() {
		<-g.ch
	}
}

// arm makes releases block until open. t's cleanup opens g before the
// members started so far stop, so a test that fails while g is shut ends
// instead of waiting on releases that never return.
func (g *gate) arm(t *testing.T) {
	g.armed.Store(true)
	t.Cleanup(g.open)
}

func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }
