// Package informerlag measures an informer's event lag, the part behind
// opkit_cache_event_lag_seconds: it remembers when each ingested object
// changed at the API server, read from its timestamps before a transform
// strips them, and, at the informer's delivery of the object's event,
// observes the seconds since and hands the change time to the handler.
//
//   - One observation per event, however many handlers the informer has:
//     the first handler to which the informer delivers an event observes
//     it, on its own delivery goroutine; the others only look its change
//     time up. An informer without handlers needs Tracker.Listener, whose
//     delivery is the only one.
//   - One clock reading per event and handler at most: the observing
//     handler's, which it also hands a TimedEventHandler as the delivery
//     time; another timed handler takes one for its delivery time; a
//     plain handler or a listener that does not observe, none.
//   - Bounded: a Tracker remembers up to maxStamps ingested objects,
//     replacing the oldest of the few entries an object may take.
//   - Safe for concurrent use: the reflector records under a lock of its
//     own; the delivery goroutines look up without one.
package informerlag

import (
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/opkit-dev/opkit/internal/wallclock"
)

// TimedEventHandler is a handler that takes each event with changed, the
// estimated time of the change at the API server, or the zero time when
// no timestamp of the object is usable, and delivered, a reading of the
// clock at its delivery (Observers.Now's), so that it need not read the
// clock itself to time its work: pkg/cache's TimedEventHandler.
type TimedEventHandler interface {
	OnAddAt(obj any, isInInitialList bool, changed, delivered time.Time)
	OnUpdateAt(oldObj, newObj any, changed, delivered time.Time)
	OnDeleteAt(obj any, changed, delivered time.Time)
}

// Observers receive the lag, in seconds, of the events of each kind.
type Observers struct {
	Add, Update, Delete func(seconds float64)
	// Now defaults to a wallclock.Clock's Now: the wall-clock time for one
	// monotonic reading, where time.Now takes two.
	Now func() time.Time
}

// maxStamps is the size of a Tracker's table: an event delivered when
// many later objects have been ingested since its own may find its entry
// replaced (no lag observation). The table is allocated at the first
// ingest and takes 160 KiB.
const maxStamps = 4096

// probes is how many consecutive entries an object's change time may be
// kept in, from the one its address hashes to. Recording replaces the
// object's own entry, else a free one, else the oldest of them.
const probes = 4

// stamp is when an ingested object last changed, in whole Unix seconds: by
// a write (the newest managedFields time, else creation) and by deletion
// (deletionTimestamp); 0 when unknown.
type stamp struct {
	write, del int64
}

// entry is one object's stamp. Only the recording goroutine writes it;
// handlers read it without a lock:
//
//   - state is gen<<2 | writing<<1 | observed. A writer sets writing,
//     stores the fields, then stores the next generation with both bits
//     clear; a reader that saw the same state before and after reading
//     the fields read one generation's fields.
//   - observed is set, by compare-and-swap of the state a reader read,
//     by the one handler that claims the event: so at most one handler
//     observes an entry's lag, and only for the generation it read.
type entry struct {
	state      atomic.Uint64
	addr       atomic.Uintptr // the object's address; 0 for a free entry
	write, del atomic.Int64
	// order is when the entry was recorded, by the Tracker's count of
	// records; read and written only under Tracker.mu.
	order uint64
}

const (
	observedBit = 1
	writingBit  = 2
)

// Tracker remembers the change times of the objects one informer
// ingested until the informer delivers them. Objects are known by
// address: an object is alive from its ingest until its last delivery, so
// no other object can share its address meanwhile, and the table holds no
// reference that would keep one alive.
//
// The ingest path records under a lock of its own that no handler takes
// (an informer's transform runs under its queue's lock, one object at a
// time, so it is never contended), and the handlers on their delivery
// goroutines read without a lock: a lock they shared with the ingest path
// made the informer's reflector and its delivery goroutines wait for each
// other, which on two cores cost more than a third of the event path's
// throughput.
type Tracker struct {
	obs Observers

	mu    sync.Mutex // serialises records
	n     uint64     // records so far
	table atomic.Pointer[[maxStamps]entry]
}

// New returns an empty Tracker that observes into obs.
func New(obs Observers) *Tracker {
	if obs.Now == nil {
		obs.Now = new(wallclock.Clock).Now
	}
	return &Tracker{obs: obs}
}

// address returns the address of obj, a pointer, or 0.
func address(obj any) uintptr {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer {
		return 0
	}
	return v.Pointer()
}

// home returns the index of the first entry an object at a may be kept in.
func home(a uintptr) int {
	return int((uint64(a) >> 3 * 0x9E3779B97F4A7C15) >> (64 - 12))
}

// changeTimes reads obj's write and deletion times (see stamp).
func changeTimes(obj any) (write, del int64) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return 0, 0
	}
	for _, f := range m.GetManagedFields() {
		if f.Time != nil && f.Time.Unix() > write {
			write = f.Time.Unix()
		}
	}
	if write == 0 {
		if c := m.GetCreationTimestamp(); !c.IsZero() {
			write = c.Unix()
		}
	}
	if d := m.GetDeletionTimestamp(); d != nil {
		del = d.Unix()
	}
	return write, del
}

// Transform returns the transform that records the change times of each
// object before next strips them.
func (t *Tracker) Transform(next toolscache.TransformFunc) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		write, del := changeTimes(obj)
		obj, err := next(obj)
		if err != nil {
			return obj, err
		}
		// Recorded even when both are unknown, so that no entry of a
		// collected object at the same address is taken for this one's.
		if a := address(obj); a != 0 {
			t.record(a, stamp{write: write, del: del})
		}
		return obj, nil
	}
}

func (t *Tracker) record(a uintptr, st stamp) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tab := t.table.Load()
	if tab == nil {
		tab = new([maxStamps]entry)
		t.table.Store(tab)
	}
	t.n++
	e := &tab[t.victim(tab, a)]
	gen := e.state.Load()>>2 + 1
	e.state.Store(gen<<2 | writingBit)
	e.addr.Store(a)
	e.write.Store(st.write)
	e.del.Store(st.del)
	e.order = t.n
	e.state.Store(gen << 2)
}

// victim returns the entry to record an object at a in: its own, else a
// free one, else the oldest of its probes.
func (t *Tracker) victim(tab *[maxStamps]entry, a uintptr) int {
	h := home(a)
	free, oldest := -1, h
	for i := range probes {
		j := (h + i) % maxStamps
		switch x := tab[j].addr.Load(); {
		case x == a:
			return j
		case x == 0:
			if free < 0 {
				free = j
			}
		case tab[j].order < tab[oldest].order:
			oldest = j
		}
	}
	if free >= 0 {
		return free
	}
	return oldest
}

// lookup returns obj's stamp and, the first time it is asked to claim it,
// true: the caller observes the event's lag.
func (t *Tracker) lookup(obj any, claim bool) (stamp, bool) {
	a := address(obj)
	tab := t.table.Load()
	if a == 0 || tab == nil {
		return stamp{}, false
	}
	h := home(a)
	for i := range probes {
		if st, first, ok := read(&tab[(h+i)%maxStamps], a, claim); ok {
			return st, first
		}
	}
	return stamp{}, false
}

// read returns e's stamp if e holds the object at a, and whether this call
// claimed it. An entry being rewritten is retried a few times, then taken
// as not the object's: its object has been replaced.
func read(e *entry, a uintptr, claim bool) (st stamp, first, ok bool) {
	for range 4 {
		s := e.state.Load()
		if s&writingBit != 0 {
			continue
		}
		if e.addr.Load() != a {
			return stamp{}, false, false
		}
		st = stamp{write: e.write.Load(), del: e.del.Load()}
		if claim && s&observedBit == 0 {
			if e.state.CompareAndSwap(s, s|observedBit) {
				return st, true, true
			}
			continue
		}
		if e.state.Load()&^observedBit == s&^observedBit {
			return st, false, true
		}
	}
	return stamp{}, false, false
}

// Len returns how many objects t remembers.
func (t *Tracker) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	tab, n := t.table.Load(), 0
	if tab == nil {
		return 0
	}
	for i := range tab {
		if tab[i].addr.Load() != 0 {
			n++
		}
	}
	return n
}

// AddTime, UpdateTime and DeleteTime are the change times of an
// informer's events, zero when unknown. They claim nothing.
func (t *Tracker) AddTime(obj any) time.Time {
	st, _ := t.lookup(obj, false)
	return unix(st.write)
}

// UpdateTime: an update that starts a deletion sets the deletionTimestamp
// without a managedFields entry, so the later of the two dates an update.
// A resync is not dated.
func (t *Tracker) UpdateTime(oldObj, newObj any) time.Time {
	at, _ := t.updateTime(oldObj, newObj, false)
	return at
}

// DeleteTime: a delete is dated only if the object has a
// deletionTimestamp: one deleted at once has none, and its last write is
// no date of its delete. The deletion's last step may be a later write (a
// finalizer removed), so the later of the two counts.
func (t *Tracker) DeleteTime(obj any) time.Time {
	at, _ := t.deleteTime(obj, false)
	return at
}

func (t *Tracker) addTime(obj any, claim bool) (time.Time, bool) {
	st, first := t.lookup(obj, claim)
	return unix(st.write), first
}

func (t *Tracker) updateTime(oldObj, newObj any, claim bool) (time.Time, bool) {
	if resync(oldObj, newObj) {
		return time.Time{}, false
	}
	st, first := t.lookup(newObj, claim)
	return unix(max(st.write, st.del)), first
}

func (t *Tracker) deleteTime(obj any, claim bool) (time.Time, bool) {
	if _, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		return time.Time{}, false // inferred on a relist: when is not known
	}
	st, first := t.lookup(obj, claim)
	if st.del == 0 {
		return time.Time{}, false
	}
	return unix(max(st.write, st.del)), first
}

func unix(sec int64) time.Time {
	if sec == 0 {
		return time.Time{}
	}
	return time.Unix(sec, 0)
}

// resync reports an update that changed nothing: a resync, or a relist
// that found the same resourceVersion. Its timestamps date the last real
// change, long delivered.
func resync(oldObj, newObj any) bool {
	o, err1 := meta.Accessor(oldObj)
	n, err2 := meta.Accessor(newObj)
	return err1 == nil && err2 == nil && o.GetResourceVersion() == n.GetResourceVersion()
}

// observe observes the lag of a change at at, if the caller claimed the
// event and at is known, and returns the clock reading it took, else the
// zero time.
func (t *Tracker) observe(at time.Time, first bool, o func(float64)) time.Time {
	if !first || at.IsZero() {
		return time.Time{}
	}
	now := t.obs.Now()
	// A change dated after now (the API server's clock ahead of ours, or
	// a managedFields time a client wrote) is no lag, not a negative one.
	o(max(now.Sub(at), 0).Seconds())
	return now
}

// delivered returns now, the reading observe took, or one taken now: the
// time a TimedEventHandler is handed an event.
func (t *Tracker) delivered(now time.Time) time.Time {
	if now.IsZero() {
		return t.obs.Now()
	}
	return now
}

// Handler returns h wrapped to observe the lag of the events it is
// delivered first, and to hand each event's change time to h if it is a
// TimedEventHandler.
func (t *Tracker) Handler(h toolscache.ResourceEventHandler) toolscache.ResourceEventHandler {
	th, _ := h.(TimedEventHandler)
	return handler{t: t, h: h, timed: th}
}

// Listener returns the handler that only observes the lag: for an
// informer with no other handler.
func (t *Tracker) Listener() toolscache.ResourceEventHandler {
	return handler{t: t, h: toolscache.ResourceEventHandlerFuncs{}}
}

type handler struct {
	t     *Tracker
	h     toolscache.ResourceEventHandler
	timed TimedEventHandler // h, if it is one
}

func (w handler) OnAdd(obj any, initial bool) {
	var at, now time.Time
	// The initial list's objects were created whenever: their age is not
	// lag.
	if !initial {
		var first bool
		at, first = w.t.addTime(obj, true)
		now = w.t.observe(at, first, w.t.obs.Add)
	}
	if w.timed != nil {
		w.timed.OnAddAt(obj, initial, at, w.t.delivered(now))
		return
	}
	w.h.OnAdd(obj, initial)
}

func (w handler) OnUpdate(oldObj, newObj any) {
	at, first := w.t.updateTime(oldObj, newObj, true)
	now := w.t.observe(at, first, w.t.obs.Update)
	if w.timed != nil {
		w.timed.OnUpdateAt(oldObj, newObj, at, w.t.delivered(now))
		return
	}
	w.h.OnUpdate(oldObj, newObj)
}

func (w handler) OnDelete(obj any) {
	at, first := w.t.deleteTime(obj, true)
	now := w.t.observe(at, first, w.t.obs.Delete)
	if w.timed != nil {
		w.timed.OnDeleteAt(obj, at, w.t.delivered(now))
		return
	}
	w.h.OnDelete(obj)
}
