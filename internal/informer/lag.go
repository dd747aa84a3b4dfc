package informer

import (
	"sync/atomic"
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
// Under a flood the informer times a sample of its events, not each (see
// sampler): above SampleRate events a second, one in two, four, and so on
// up to one in MaxSampleStride, chosen by count as they are ingested, so
// that the metrics' cost stays a small share of the event's. An event not
// in the sample is neither dated nor observed, and its TimedEventHandlers
// are handed zero times: they must not time it either. Below the rate,
// every event is.
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
// clock to time its work; or the zero time when the event is not in the
// informer's sample, which the handler must then not time. It returns done, a reading of the clock (as
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

// unwrap returns an object as the store is to hold it, its stamp, and
// whether it was stamped: with Lag, whether its event is timed.
func unwrap(obj any) (any, stamp, bool) {
	switch o := obj.(type) {
	case *stamped:
		return o.obj, o.stamp, true
	case toolscache.DeletedFinalStateUnknown:
		// A relist's inferred delete of an object still queued.
		if s, ok := o.Obj.(*stamped); ok {
			o.Obj = s.obj
		}
		return o, stamp{}, false
	}
	return obj, stamp{}, false
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
	untimed          bool      // not in the sample: neither dated nor timed
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
	if e.stamped.IsZero() && !e.untimed {
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

const (
	// SampleRate is the events a second an informer times each of; above
	// it, a sample.
	SampleRate = 2000
	// MaxSampleStride is the most events an informer delivers for each
	// it times.
	MaxSampleStride = 32
	// sampleWindow is how often, at most, the informer sets its stride
	// from the rate of its events.
	sampleWindow = 10 * time.Millisecond
)

// sampler picks the events an informer with Lag times: every one while
// it delivers fewer than SampleRate a second, else one in stride, the
// least power of two that brings the events timed to SampleRate a second
// or fewer, up to MaxSampleStride. The pick is made as the object is
// ingested, before it is stamped (so that an event not timed costs no
// stamp), by a count. The stride is set on the delivery goroutine at each
// timed event's clock reading: from the rate of a window of sampleWindow
// or more, and lowered at once when the events since the last timed one
// took a window or more and came slower than the stride is for, so that a
// flood's end is noticed within a stride's events.
type sampler struct {
	stride  atomic.Uint32 // 0 or 1: every event
	counted atomic.Uint64 // objects ingested while stride > 1

	// Under the informer's delivering:
	events    int       // delivered since since
	since     time.Time // the start of the window; zero before the first
	untimed   int       // delivered since the last timed event
	lastTimed time.Time // the reading of the last timed event
}

// reset times every event again, and starts the next window afresh: after
// a list, whose objects came at once but were no flood of changes, so that
// the sparse events after it need not wait a stride's events to be timed.
// The caller holds the informer's delivering.
func (s *sampler) reset() {
	s.stride.Store(1)
	s.since, s.events, s.untimed = time.Time{}, 0, 0
}

// take reports whether the next object ingested is to be timed. It may be
// called on any goroutine.
func (s *sampler) take() bool {
	stride := s.stride.Load()
	return stride <= 1 || s.counted.Add(1)%uint64(stride) == 0
}

// delivered counts an event delivered, and with now, the clock reading of
// a timed one, sets the stride. The caller holds the informer's
// delivering.
func (s *sampler) delivered(now time.Time) {
	s.events++
	if now.IsZero() {
		s.untimed++
		return
	}
	if s.since.IsZero() {
		s.since, s.events, s.lastTimed, s.untimed = now, 0, now, 0
		return
	}
	if gap := now.Sub(s.lastTimed); gap >= sampleWindow {
		if recent := strideFor(float64(s.untimed+1) / gap.Seconds()); recent < s.stride.Load() {
			s.stride.Store(recent)
			s.since, s.events = now, 0 // the window held the flood
		}
	}
	s.lastTimed, s.untimed = now, 0
	if elapsed := now.Sub(s.since); elapsed >= sampleWindow {
		s.stride.Store(strideFor(float64(s.events) / elapsed.Seconds()))
		s.since, s.events = now, 0
	}
}

// strideFor is the stride for events at rate a second.
func strideFor(rate float64) uint32 {
	stride := uint32(1)
	for stride < MaxSampleStride && rate > SampleRate*float64(stride) {
		stride *= 2
	}
	return stride
}
