package informer

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/opkit-dev/opkit/internal/wallclock"
)

// Lag has an informer date each event by when its object changed at the
// API server, and observe the event's lag, the seconds from that change to
// the informer's storing and delivering it: opkit_cache_event_lag_seconds.
//
// The change time is read from the object as it is ingested, before the
// informer's transform strips the timestamps it is read from (the newest
// managedFields time, else the creation time, and the deletionTimestamp),
// and travels with the object through the informer's queue, however long
// the queue: no event loses its date to a backlog, and nothing is kept
// for an object once its event is delivered.
//
//   - An add is dated by the object's last write; an add of the initial
//     list is not dated (its objects changed whenever, and their age is
//     not lag).
//   - An update by the later of its last write and its deletionTimestamp
//     (an update that starts a deletion sets the latter without a
//     managedFields entry); a resync, or a relist that finds the same
//     resourceVersion, is not dated.
//   - A delete by the later of the two, only if the object has a
//     deletionTimestamp (one deleted at once has none, and its last write
//     is no date of its delete); a delete inferred on a relist is not
//     dated.
//
// Each dated event is observed once, however many handlers the informer
// has, with one clock reading, which TimedEventHandlers are handed as the
// delivery time. The reading is taken before the event is stored: the
// reading a TimedEventHandler returned for the event before it in the
// same batch from the informer's queue (its handlers take no time after
// it), or a reading of the clock if it returned none. So an event whose
// handler times itself costs one clock reading, the handler's.
type Lag struct {
	Add, Update, Delete func(seconds float64)
	// Now defaults to a wallclock.Clock's Now: the wall-clock time for
	// one monotonic reading, where time.Now takes two.
	Now func() time.Time
}

// TimedEventHandler is a handler that takes each event with changed, its
// date (see Lag), or the zero time when it has none, and delivered, a
// reading of the clock at its delivery, so that it need not read the
// clock to time its work. It returns done, a reading of the clock (as
// delivered is one: wall and monotonic) taken as it returned, or the zero
// time if it took none; the informer dates the next event's delivery by
// it rather than read the clock again. An informer without Lag calls the
// plain methods instead.
type TimedEventHandler interface {
	OnAddAt(obj any, isInInitialList bool, changed, delivered time.Time) (done time.Time)
	OnUpdateAt(oldObj, newObj any, changed, delivered time.Time) (done time.Time)
	OnDeleteAt(obj any, changed, delivered time.Time) (done time.Time)
}

// stamp is when an ingested object last changed, in whole Unix seconds: by
// a write and by deletion; 0 when unknown.
type stamp struct {
	write, del int64
}

// stamped is an object on its way through the informer's queue with its
// stamp, read before the transform.
type stamped struct {
	obj any
	stamp
}

// changeTimes reads obj's stamp.
func changeTimes(obj any) stamp {
	m, err := meta.Accessor(obj)
	if err != nil {
		return stamp{}
	}
	var st stamp
	for _, f := range m.GetManagedFields() {
		if f.Time != nil && f.Time.Unix() > st.write {
			st.write = f.Time.Unix()
		}
	}
	if st.write == 0 {
		if c := m.GetCreationTimestamp(); !c.IsZero() {
			st.write = c.Unix()
		}
	}
	if d := m.GetDeletionTimestamp(); d != nil {
		st.del = d.Unix()
	}
	return st
}

// unwrap returns an object as the store is to hold it, and its stamp.
func unwrap(obj any) (any, stamp) {
	switch o := obj.(type) {
	case *stamped:
		return o.obj, o.stamp
	case toolscache.DeletedFinalStateUnknown:
		// A relist's inferred delete of an object still queued.
		if s, ok := o.Obj.(*stamped); ok {
			o.Obj = s.obj
		}
		return o, stamp{}
	}
	return obj, stamp{}
}

func unix(sec int64) time.Time {
	if sec == 0 {
		return time.Time{}
	}
	return time.Unix(sec, 0)
}

// event is one event being delivered: its objects, its date and, once
// read, the clock at its delivery.
type event struct {
	kind             byte // 'a', 'u', 'd'
	obj, old         any
	isInInitialList  bool
	changed, stamped time.Time // stamped: the delivery time, zero until read
}

// date dates e (see Lag) from st.
func (e *event) date(st stamp) {
	switch e.kind {
	case 'a':
		if !e.isInInitialList {
			e.changed = unix(st.write)
		}
	case 'u':
		if !resync(e.old, e.obj) {
			e.changed = unix(max(st.write, st.del))
		}
	case 'd':
		if _, ok := e.obj.(toolscache.DeletedFinalStateUnknown); !ok && st.del != 0 {
			e.changed = unix(max(st.write, st.del))
		}
	}
}

// resync reports an update that changed nothing: a resync, or a relist
// that found the same resourceVersion. Its timestamps date the last real
// change, long delivered.
func resync(oldObj, newObj any) bool {
	o, err1 := meta.Accessor(oldObj)
	n, err2 := meta.Accessor(newObj)
	return err1 == nil && err2 == nil && o.GetResourceVersion() == n.GetResourceVersion()
}

// observe observes e's lag, if it is dated, from e.stamped, its delivery
// time.
func (l *Lag) observe(e *event) {
	if e.changed.IsZero() {
		return
	}
	now := e.stamped
	var o func(float64)
	switch e.kind {
	case 'a':
		o = l.Add
	case 'u':
		o = l.Update
	default:
		o = l.Delete
	}
	if o != nil {
		// A change dated after now (the API server's clock ahead of
		// ours, or a managedFields time a client wrote) is no lag, not
		// a negative one.
		o(max(now.Sub(e.changed), 0).Seconds())
	}
}

// deliver hands e to h, with its times if h is timed and the informer
// keeps Lag (l non-nil), and returns the reading of the clock h returned,
// if any.
func (l *Lag) deliver(e *event, h toolscache.ResourceEventHandler, timed TimedEventHandler) (done time.Time) {
	if l == nil || timed == nil {
		switch e.kind {
		case 'a':
			h.OnAdd(e.obj, e.isInInitialList)
		case 'u':
			h.OnUpdate(e.old, e.obj)
		default:
			h.OnDelete(e.obj)
		}
		return time.Time{}
	}
	if e.stamped.IsZero() {
		e.stamped = l.Now()
	}
	switch e.kind {
	case 'a':
		return timed.OnAddAt(e.obj, e.isInInitialList, e.changed, e.stamped)
	case 'u':
		return timed.OnUpdateAt(e.old, e.obj, e.changed, e.stamped)
	default:
		return timed.OnDeleteAt(e.obj, e.changed, e.stamped)
	}
}

func newLag(l *Lag) *Lag {
	if l == nil {
		return nil
	}
	c := *l
	if c.Now == nil {
		c.Now = new(wallclock.Clock).Now
	}
	return &c
}
