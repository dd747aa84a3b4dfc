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
//   - One clock reading per event, taken by the observing handler.
//   - Bounded: a Tracker remembers the last maxStamps ingested objects.
//   - Safe for concurrent use: the reflector records, the delivery
//     goroutines look up.
package informerlag

import (
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
)

// TimedEventHandler is a handler that takes each event with changed, the
// estimated time of the change at the API server, or the zero time when
// no timestamp of the object is usable: pkg/cache's TimedEventHandler.
type TimedEventHandler interface {
	OnAddAt(obj any, isInInitialList bool, changed time.Time)
	OnUpdateAt(oldObj, newObj any, changed time.Time)
	OnDeleteAt(obj any, changed time.Time)
}

// Observers receive the lag, in seconds, of the events of each kind.
type Observers struct {
	Add, Update, Delete func(seconds float64)
	// Now defaults to time.Now.
	Now func() time.Time
}

// maxStamps bounds the change times a Tracker remembers: an event
// delivered more than maxStamps ingested objects after its own ingest has
// no change time (no lag observation). It bounds the memory to about
// 200 KiB per informer.
const maxStamps = 4096

// stamp is when an ingested object last changed, in whole Unix seconds: by
// a write (the newest managedFields time, else creation) and by deletion
// (deletionTimestamp); 0 when unknown.
type stamp struct {
	addr       uintptr // the object's address; 0 for a free slot
	write, del int64
	observed   bool // a delivery of the object's event observed its lag
}

// Tracker remembers the change times of the objects one informer
// ingested until the informer delivers them. Objects are known by
// address: an object is alive from its ingest until its last delivery, so
// no other object can share its address meanwhile, and the table holds no
// reference that would keep one alive.
type Tracker struct {
	obs Observers

	mu sync.Mutex
	// Invariant: slot[a] == i if and only if ring[i].addr == a != 0.
	slot map[uintptr]int32
	ring []stamp // by ingest order, oldest at ring[next] when full
	next int
}

// New returns an empty Tracker that observes into obs.
func New(obs Observers) *Tracker {
	if obs.Now == nil {
		obs.Now = time.Now
	}
	return &Tracker{obs: obs, slot: map[uintptr]int32{}}
}

// address returns the address of obj, a pointer, or 0.
func address(obj any) uintptr {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer {
		return 0
	}
	return v.Pointer()
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
			t.record(a, write, del)
		}
		return obj, nil
	}
}

func (t *Tracker) record(a uintptr, write, del int64) {
	st := stamp{addr: a, write: write, del: del}
	t.mu.Lock()
	defer t.mu.Unlock()
	if i, ok := t.slot[a]; ok {
		// Recorded again: its older entry goes, the slot stays in place.
		t.ring[i] = stamp{}
	}
	var i int
	if len(t.ring) < maxStamps {
		i = len(t.ring)
		t.ring = append(t.ring, st)
	} else {
		i = t.next
		if old := t.ring[i].addr; old != 0 {
			delete(t.slot, old)
		}
		t.ring[i] = st
		t.next = (t.next + 1) % maxStamps
	}
	t.slot[a] = int32(i)
}

// lookup returns obj's stamp and, the first time it is asked to claim it,
// true: the caller observes the event's lag.
func (t *Tracker) lookup(obj any, claim bool) (stamp, bool) {
	a := address(obj)
	if a == 0 {
		return stamp{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	i, ok := t.slot[a]
	if !ok {
		return stamp{}, false
	}
	st := t.ring[i]
	first := claim && !st.observed
	if first {
		t.ring[i].observed = true
	}
	return st, first
}

// Len returns how many objects t remembers.
func (t *Tracker) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.slot)
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
// event and at is known.
func (t *Tracker) observe(at time.Time, first bool, o func(float64)) {
	if first && !at.IsZero() {
		o(t.obs.Now().Sub(at).Seconds())
	}
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
	var at time.Time
	// The initial list's objects were created whenever: their age is not
	// lag.
	if !initial {
		var first bool
		at, first = w.t.addTime(obj, true)
		w.t.observe(at, first, w.t.obs.Add)
	}
	if w.timed != nil {
		w.timed.OnAddAt(obj, initial, at)
		return
	}
	w.h.OnAdd(obj, initial)
}

func (w handler) OnUpdate(oldObj, newObj any) {
	at, first := w.t.updateTime(oldObj, newObj, true)
	w.t.observe(at, first, w.t.obs.Update)
	if w.timed != nil {
		w.timed.OnUpdateAt(oldObj, newObj, at)
		return
	}
	w.h.OnUpdate(oldObj, newObj)
}

func (w handler) OnDelete(obj any) {
	at, first := w.t.deleteTime(obj, true)
	w.t.observe(at, first, w.t.obs.Delete)
	if w.timed != nil {
		w.timed.OnDeleteAt(obj, at)
		return
	}
	w.h.OnDelete(obj)
}
