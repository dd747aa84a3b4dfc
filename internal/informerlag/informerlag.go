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
//   - Nothing lost to a backlog: a Tracker remembers every ingested object
//     until each of its Handlers has been delivered it, however many are
//     ingested meanwhile, up to maxEntries; its table grows with the
//     informer's backlog and shrinks back after. A Handler removed from
//     its informer must be released (Handler.Release).
//   - Safe for concurrent use: the reflector records under a lock of its
//     own; the delivery goroutines look up without one.
package informerlag

import (
	"reflect"
	"runtime"
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

// minEntries is the size of a Tracker's table while few of the objects it
// remembers are undelivered; the table is allocated at the first ingest
// and then takes 160 KiB. It doubles whenever an object finds no entry
// free (see Tracker), and halves back, at most to this size, once most of
// its entries are delivered: it holds as many entries as the informer's
// backlog, which holds the objects themselves, each far larger than an
// entry (40 bytes).
const minEntries = 4096

// maxEntries caps the table at 40 MiB: past a backlog of about half a
// million objects, the oldest undelivered objects lose their change times
// (no lag observation) rather than the table growing further.
const maxEntries = 1 << 20

// probes is how many consecutive entries an object's change time may be
// kept in, from the one its address hashes to.
const probes = 8

// stamp is when an ingested object last changed, in whole Unix seconds: by
// a write (the newest managedFields time, else creation) and by deletion
// (deletionTimestamp); 0 when unknown.
type stamp struct {
	write, del int64
}

// entry is one object's stamp. Only the recording goroutine writes it;
// handlers read it without a lock:
//
//   - state is gen<<3 | moved<<2 | writing<<1 | observed. A writer sets
//     writing, stores the fields, then stores the next generation with
//     the bits clear; a reader that saw the same state before and after
//     reading the fields read one generation's fields.
//   - observed is set, by compare-and-swap of the state a reader read,
//     by the one handler that claims the event: so at most one handler
//     observes an entry's lag, and only for the generation it read.
//   - moved is set, for good, when the table is replaced by a larger or
//     smaller one holding the entry's copy: a reader then looks again in
//     the new table.
type entry struct {
	state      atomic.Uint64
	addr       atomic.Uintptr // the object's address; 0 for a free entry
	write, del atomic.Int64
	// order is the record's number among the Tracker's records, from 1.
	order atomic.Uint64
}

const (
	observedBit = 1
	writingBit  = 2
	movedBit    = 4
	genShift    = 3
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
//
// An entry is free once every handler has been delivered its object. An
// informer delivers objects to each handler in the order it ingested
// them, so each handler (a consumer) notes the number of the last record
// it looked up, and every record up to the least of those numbers, the
// floor, is delivered to all of them. Once the informer delivers, a
// record that finds no entry free among its probes doubles the table; the
// table halves once few of its entries are undelivered.
type Tracker struct {
	obs Observers

	mu        sync.Mutex // serialises records, resizes and the consumer set
	n         uint64     // records so far
	floor     uint64     // records up to this one are delivered to every consumer
	consumers map[*consumer]struct{}
	table     atomic.Pointer[[]entry]
}

// consumer is one handler's progress through the records.
type consumer struct {
	seen   atomic.Uint64 // the number of the newest record it looked up
	joined uint64        // seen when it joined
}

// New returns an empty Tracker that observes into obs.
func New(obs Observers) *Tracker {
	if obs.Now == nil {
		obs.Now = new(wallclock.Clock).Now
	}
	return &Tracker{obs: obs, consumers: map[*consumer]struct{}{}}
}

// address returns the address of obj, a pointer, or 0.
func address(obj any) uintptr {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer {
		return 0
	}
	return v.Pointer()
}

// home returns the index of the first entry an object at a may be kept in,
// in a table of size entries, a power of two.
func home(a uintptr, size int) int {
	return int((uint64(a) >> 3 * 0x9E3779B97F4A7C15) >> 32 & uint64(size-1))
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
		tab = t.resize(nil, minEntries)
	}
	t.n++
	j := t.slot(*tab, a)
	if j < 0 {
		t.raiseFloor()
		j = t.slot(*tab, a)
		for j < 0 && t.delivering() && len(*tab) < maxEntries {
			tab = t.resize(*tab, 2*len(*tab))
			j = t.slot(*tab, a)
		}
		if j < 0 {
			// Before delivery starts, or at maxEntries: the oldest
			// record among the probes makes way.
			j = t.oldest(*tab, a)
		}
	}
	store(&(*tab)[j], a, st, t.n)
	if t.n%minEntries == 0 {
		t.shrink(*tab)
	}
}

// store writes a record into e, which the caller owns (t.mu).
func store(e *entry, a uintptr, st stamp, order uint64) {
	gen := e.state.Load()>>genShift + 1
	e.state.Store(gen<<genShift | writingBit)
	e.addr.Store(a)
	e.write.Store(st.write)
	e.del.Store(st.del)
	e.order.Store(order)
	e.state.Store(gen << genShift)
}

// slot returns the entry to record an object at a in: its own, else one
// free, or -1.
func (t *Tracker) slot(tab []entry, a uintptr) int {
	h, free := home(a, len(tab)), -1
	for i := range probes {
		j := (h + i) & (len(tab) - 1)
		switch x := tab[j].addr.Load(); {
		case x == a:
			return j
		case free < 0 && (x == 0 || tab[j].order.Load() <= t.floor):
			free = j
		}
	}
	return free
}

// oldest returns the entry, among the probes of an object at a, of the
// oldest record.
func (t *Tracker) oldest(tab []entry, a uintptr) int {
	h := home(a, len(tab))
	j := h
	for i := 1; i < probes; i++ {
		if k := (h + i) & (len(tab) - 1); tab[k].order.Load() < tab[j].order.Load() {
			j = k
		}
	}
	return j
}

// delivering reports whether the informer has delivered any consumer an
// object since it joined: until then the table does not grow. An
// informer ingests its initial list, all at once, before it delivers any
// of it, and no add of the initial list is observed: a table that grew to
// hold the list would cost 80 bytes an object at every start for nothing.
func (t *Tracker) delivering() bool {
	for c := range t.consumers {
		if c.seen.Load() > c.joined {
			return true
		}
	}
	return false
}

// raiseFloor sets the floor to the least record number the consumers have
// looked up. Without consumers, the records but the newest minEntries/2
// count as delivered.
func (t *Tracker) raiseFloor() {
	if len(t.consumers) == 0 {
		if t.n > minEntries/2 {
			t.floor = max(t.floor, t.n-minEntries/2)
		}
		return
	}
	least := t.n
	for c := range t.consumers {
		least = min(least, c.seen.Load())
	}
	t.floor = max(t.floor, least)
}

// shrink halves the table, down to minEntries, while at most an eighth of
// its entries are undelivered.
func (t *Tracker) shrink(tab []entry) {
	t.raiseFloor()
	size := len(tab)
	for size > minEntries && (t.n-t.floor)*8 <= uint64(size/2) {
		size /= 2
	}
	if size < len(tab) {
		t.resize(tab, size)
	}
}

// resize replaces the table with one of the given size holding the
// undelivered records of old, and returns it. Each old entry is marked
// moved before it is copied, so that a claim made in the old table is
// either copied or retried in the new one. Should an entry find no free
// probe in the new table, a table twice the size is tried.
func (t *Tracker) resize(old []entry, size int) *[]entry {
	for i := range old {
		e := &old[i]
		for s := e.state.Load(); !e.state.CompareAndSwap(s, s|movedBit); s = e.state.Load() {
		}
	}
	for {
		tab := make([]entry, size)
		if t.copyLive(old, tab) || size >= maxEntries {
			t.table.Store(&tab)
			return &tab
		}
		size *= 2
	}
}

// copyLive copies the undelivered records of old, whose entries are all
// moved, into tab, and reports whether each found a free probe.
func (t *Tracker) copyLive(old, tab []entry) bool {
	for i := range old {
		e := &old[i]
		a := e.addr.Load()
		if a == 0 || e.order.Load() <= t.floor {
			continue
		}
		j := t.slot(tab, a)
		if j < 0 {
			return false
		}
		c := &tab[j]
		c.addr.Store(a)
		c.write.Store(e.write.Load())
		c.del.Store(e.del.Load())
		c.order.Store(e.order.Load())
		c.state.Store(e.state.Load() &^ movedBit)
	}
	return true
}

// lookup returns obj's stamp and, the first time it is asked to claim it,
// true: the caller observes the event's lag. c, the caller's consumer,
// notes the record as looked up.
func (t *Tracker) lookup(c *consumer, obj any, claim bool) (stamp, bool) {
	if a := address(obj); a != 0 {
		return t.lookupAt(c, a, claim)
	}
	return stamp{}, false
}

// lookupAt is lookup of the object at a.
func (t *Tracker) lookupAt(c *consumer, a uintptr, claim bool) (stamp, bool) {
	for {
		tab := t.table.Load()
		if tab == nil {
			return stamp{}, false
		}
		st, order, first, res := find(*tab, a, claim)
		switch res {
		case found:
			if c != nil && order > c.seen.Load() {
				c.seen.Store(order)
			}
			return st, first
		case missing:
			return stamp{}, false
		}
		// moved: the table is being replaced; look in the new one.
		if t.table.Load() == tab {
			runtime.Gosched()
		}
	}
}

type result int

const (
	missing result = iota
	found
	moved
)

func find(tab []entry, a uintptr, claim bool) (st stamp, order uint64, first bool, res result) {
	h := home(a, len(tab))
	for i := range probes {
		st, order, first, res = read(&tab[(h+i)&(len(tab)-1)], a, claim)
		if res != missing {
			return st, order, first, res
		}
	}
	return stamp{}, 0, false, missing
}

// read returns e's stamp and record number if e holds the object at a,
// and whether this call claimed it. An entry being rewritten is retried a
// few times, then taken as not the object's: its object has been
// replaced.
func read(e *entry, a uintptr, claim bool) (st stamp, order uint64, first bool, res result) {
	for range 4 {
		s := e.state.Load()
		if s&movedBit != 0 {
			return stamp{}, 0, false, moved
		}
		if s&writingBit != 0 {
			continue
		}
		if e.addr.Load() != a {
			return stamp{}, 0, false, missing
		}
		st, order = stamp{write: e.write.Load(), del: e.del.Load()}, e.order.Load()
		if claim && s&observedBit == 0 {
			if e.state.CompareAndSwap(s, s|observedBit) {
				return st, order, true, found
			}
			continue
		}
		if e.state.Load()&^observedBit == s&^observedBit {
			return st, order, false, found
		}
	}
	return stamp{}, 0, false, missing
}

// Len returns how many objects t remembers.
func (t *Tracker) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	tab, n := t.table.Load(), 0
	if tab == nil {
		return 0
	}
	for i := range *tab {
		if (*tab)[i].addr.Load() != 0 {
			n++
		}
	}
	return n
}

// size returns the table's size.
func (t *Tracker) size() int {
	if tab := t.table.Load(); tab != nil {
		return len(*tab)
	}
	return 0
}

// join adds a consumer, which starts at the floor: every record not yet
// delivered to all consumers may be delivered to it too.
func (t *Tracker) join() *consumer {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.raiseFloor()
	c := &consumer{joined: t.floor}
	c.seen.Store(t.floor)
	t.consumers[c] = struct{}{}
	return c
}

// Handlers returns how many of t's Handlers are not released.
func (t *Tracker) Handlers() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.consumers)
}

func (t *Tracker) leave(c *consumer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.consumers, c)
}

// AddTime, UpdateTime and DeleteTime are the change times of an
// informer's events, zero when unknown. They claim nothing.
func (t *Tracker) AddTime(obj any) time.Time {
	at, _ := t.addTime(nil, obj, false)
	return at
}

// UpdateTime: an update that starts a deletion sets the deletionTimestamp
// without a managedFields entry, so the later of the two dates an update.
// A resync is not dated.
func (t *Tracker) UpdateTime(oldObj, newObj any) time.Time {
	at, _ := t.updateTime(nil, oldObj, newObj, false)
	return at
}

// DeleteTime: a delete is dated only if the object has a
// deletionTimestamp: one deleted at once has none, and its last write is
// no date of its delete. The deletion's last step may be a later write (a
// finalizer removed), so the later of the two counts.
func (t *Tracker) DeleteTime(obj any) time.Time {
	at, _ := t.deleteTime(nil, obj, false)
	return at
}

func (t *Tracker) addTime(c *consumer, obj any, claim bool) (time.Time, bool) {
	st, first := t.lookup(c, obj, claim)
	return unix(st.write), first
}

func (t *Tracker) updateTime(c *consumer, oldObj, newObj any, claim bool) (time.Time, bool) {
	if resync(oldObj, newObj) {
		return time.Time{}, false
	}
	st, first := t.lookup(c, newObj, claim)
	return unix(max(st.write, st.del)), first
}

func (t *Tracker) deleteTime(c *consumer, obj any, claim bool) (time.Time, bool) {
	if _, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		return time.Time{}, false // inferred on a relist: when is not known
	}
	st, first := t.lookup(c, obj, claim)
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

// Handler is a handler wrapped by Tracker.Handler or Tracker.Listener.
// Its informer delivers it the objects the Tracker remembers, which it
// keeps until every Handler is delivered them: Release a Handler that is
// removed from its informer, or the Tracker keeps every object ingested
// since, up to its cap.
type Handler struct {
	t     *Tracker
	c     *consumer
	h     toolscache.ResourceEventHandler
	timed TimedEventHandler // h, if it is one
}

// Handler returns h wrapped to observe the lag of the events it is
// delivered first, and to hand each event's change time to h if it is a
// TimedEventHandler.
func (t *Tracker) Handler(h toolscache.ResourceEventHandler) *Handler {
	th, _ := h.(TimedEventHandler)
	return &Handler{t: t, c: t.join(), h: h, timed: th}
}

// Listener returns the handler that only observes the lag: for an
// informer with no other handler.
func (t *Tracker) Listener() *Handler {
	return t.Handler(toolscache.ResourceEventHandlerFuncs{})
}

// Release tells the Tracker that w gets no more events. It is idempotent,
// and does nothing on a nil Handler.
func (w *Handler) Release() {
	if w != nil {
		w.t.leave(w.c)
	}
}

func (w *Handler) OnAdd(obj any, initial bool) {
	var at, now time.Time
	if initial {
		// The initial list's objects were created whenever: their age
		// is not lag. The lookup only notes them delivered.
		w.t.lookup(w.c, obj, false)
	} else {
		var first bool
		at, first = w.t.addTime(w.c, obj, true)
		now = w.t.observe(at, first, w.t.obs.Add)
	}
	if w.timed != nil {
		w.timed.OnAddAt(obj, initial, at, w.t.delivered(now))
		return
	}
	w.h.OnAdd(obj, initial)
}

func (w *Handler) OnUpdate(oldObj, newObj any) {
	at, first := w.t.updateTime(w.c, oldObj, newObj, true)
	now := w.t.observe(at, first, w.t.obs.Update)
	if w.timed != nil {
		w.timed.OnUpdateAt(oldObj, newObj, at, w.t.delivered(now))
		return
	}
	w.h.OnUpdate(oldObj, newObj)
}

func (w *Handler) OnDelete(obj any) {
	at, first := w.t.deleteTime(w.c, obj, true)
	now := w.t.observe(at, first, w.t.obs.Delete)
	if w.timed != nil {
		w.timed.OnDeleteAt(obj, at, w.t.delivered(now))
		return
	}
	w.h.OnDelete(obj)
}
