package cache

import (
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
)

// TimedEventHandler is an optional ability of a handler passed to
// Lister.AddEventHandler: with the cache's metrics on (Options.Registerer),
// the cache calls these methods instead of the ResourceEventHandler ones,
// with changed, the estimated time of the change at the API server (see
// opkit_cache_event_lag_seconds for how it is estimated), or the zero time when no
// timestamp of the object is usable. pkg/source's handlers implement it to
// measure a controller's lag end to end.
type TimedEventHandler interface {
	OnAddAt(obj any, isInInitialList bool, changed time.Time)
	OnUpdateAt(oldObj, newObj any, changed time.Time)
	OnDeleteAt(obj any, changed time.Time)
}

// maxStamps bounds the change times an informer remembers: an event
// delivered more than maxStamps ingested objects after its own ingest has
// no change time (no lag observation). It bounds the memory to about
// 200 KiB per informer, and only with metrics on.
const maxStamps = 4096

// stamp is when an ingested object last changed, in whole Unix seconds: by
// a write (the newest managedFields time, else creation) and by deletion
// (deletionTimestamp); 0 when unknown.
type stamp struct {
	write, del int64
	seq        uint64 // which ring entry recorded it
}

// stamps remembers the change times of the objects an informer ingested,
// read before the transform strips managedFields, until the informer
// delivers them. Objects are known by address: an object is alive from its
// ingest until its last delivery, so no other object can share its address
// meanwhile, and the table holds no reference that would keep one alive.
// Safe for concurrent use: the reflector records, the delivery goroutines
// look up.
type stamps struct {
	mu   sync.Mutex
	m    map[uintptr]stamp // by object address
	ring []uintptr         // addresses by ingest order, oldest at ring[next] when full
	next int
	seq  uint64
}

func newStamps() *stamps { return &stamps{m: map[uintptr]stamp{}} }

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

// wrap returns the transform that records the change times of each object
// before next strips them.
func (s *stamps) wrap(next toolscache.TransformFunc) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		write, del := changeTimes(obj)
		obj, err := next(obj)
		if err != nil {
			return obj, err
		}
		// Recorded even when both are unknown, so that no entry of a
		// collected object at the same address is taken for this one's.
		if a := address(obj); a != 0 {
			s.record(a, write, del)
		}
		return obj, nil
	}
}

func (s *stamps) record(a uintptr, write, del int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	if len(s.ring) < maxStamps {
		s.ring = append(s.ring, a)
	} else {
		old := s.ring[s.next]
		// Forget the oldest entry unless its address was recorded again.
		if st, ok := s.m[old]; ok && st.seq == s.seq-maxStamps {
			delete(s.m, old)
		}
		s.ring[s.next] = a
		s.next = (s.next + 1) % maxStamps
	}
	s.m[a] = stamp{write: write, del: del, seq: s.seq}
}

func (s *stamps) lookup(obj any) stamp {
	a := address(obj)
	if a == 0 {
		return stamp{}
	}
	s.mu.Lock()
	st := s.m[a]
	s.mu.Unlock()
	return st
}

// addTime, updateTime and deleteTime are the change times of an informer's
// events, zero when unknown.
func (s *stamps) addTime(obj any) time.Time { return unix(s.lookup(obj).write) }

// An update that starts a deletion sets the deletionTimestamp without a
// managedFields entry, so the later of the two dates an update.
func (s *stamps) updateTime(oldObj, newObj any) time.Time {
	if resync(oldObj, newObj) {
		return time.Time{}
	}
	st := s.lookup(newObj)
	return unix(max(st.write, st.del))
}

// A delete is dated only if the object has a deletionTimestamp: one
// deleted at once has none, and its last write is no date of its delete.
// The deletion's last step may be a later write (a finalizer removed), so
// the later of the two counts.
func (s *stamps) deleteTime(obj any) time.Time {
	if _, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		return time.Time{} // inferred on a relist: when is not known
	}
	st := s.lookup(obj)
	if st.del == 0 {
		return time.Time{}
	}
	return unix(max(st.write, st.del))
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

// timedHandler hands a TimedEventHandler each event with its change time.
type timedHandler struct {
	h      TimedEventHandler
	stamps *stamps
}

func (t timedHandler) OnAdd(obj any, initial bool) {
	var at time.Time
	if !initial {
		at = t.stamps.addTime(obj)
	}
	t.h.OnAddAt(obj, initial, at)
}

func (t timedHandler) OnUpdate(oldObj, newObj any) {
	t.h.OnUpdateAt(oldObj, newObj, t.stamps.updateTime(oldObj, newObj))
}

func (t timedHandler) OnDelete(obj any) { t.h.OnDeleteAt(obj, t.stamps.deleteTime(obj)) }

// lagObserver is the informer's own handler that observes opkit_cache_event_lag_seconds
// at each delivery: one observation per event, however many handlers the
// informer has.
type lagObserver struct {
	stamps           *stamps
	add, update, del func(float64)
	now              func() time.Time
}

func (l lagObserver) observe(at time.Time, o func(float64)) {
	if !at.IsZero() {
		o(l.now().Sub(at).Seconds())
	}
}

func (l lagObserver) OnAdd(obj any, initial bool) {
	// The initial list's objects were created whenever: their age is not
	// lag.
	if !initial {
		l.observe(l.stamps.addTime(obj), l.add)
	}
}

func (l lagObserver) OnUpdate(oldObj, newObj any) {
	l.observe(l.stamps.updateTime(oldObj, newObj), l.update)
}

func (l lagObserver) OnDelete(obj any) { l.observe(l.stamps.deleteTime(obj), l.del) }
