package budget

import (
	"net/http"
	"slices"
	"strings"
	"time"
)

// The latency signal's thresholds; docs/api-budget.md says why these.
const (
	// A measured request is slow when it took longer than both slowFloor
	// and slowFactor times its kind's baseline.
	slowFloor  = time.Second
	slowFactor = 4
	// The requests answered in the last fastWindow (fastSlots slots of
	// slotLen) were slow when they number at least fastMinSamples, more
	// than half are slow, and the slow ones were answered over at least
	// fastMinSpan: a stall of the server that answers every request it
	// held at once is one slow moment, not a trend.
	fastWindow     = 2 * time.Second
	fastSlots      = 8
	slotLen        = fastWindow / fastSlots
	fastMinSamples = 10
	fastMinSpan    = time.Second
	// A kind's baseline is the lowest median latency of its spells (of
	// spellLen) of the last baselineSpan that held at least
	// baselineMinSamples of its requests; a spell keeps up to spellKept
	// latencies, spread over it, for its median.
	spellLen           = 10 * time.Second
	baselineSpells     = 30
	baselineSpan       = baselineSpells * spellLen
	baselineMinSamples = 5
	spellKept          = 32
	// maxKinds bounds the kinds measured; a kind idle for baselineSpan
	// makes room for another.
	maxKinds = 128
)

// latency is the budget's latency signal: a baseline per kind of request
// (verb and resource, see measuredKind), since a create that a slow
// admission webhook reviews is slower than a get, whatever the server's
// load; and the requests answered in the last fastWindow, each slow or
// not against its kind's baseline. It is guarded by the Budget's mutex.
type latency struct {
	kinds map[string]*kindLatency
	// slots[cur] counts the requests answered since curStart, the slots
	// before it (cyclically) those answered in the slotLen before each.
	slots    [fastSlots]slot
	cur      int
	curStart time.Time
}

// slot counts the measured requests answered in a slotLen of time.
type slot struct {
	n, slow int
	slowSum time.Duration // of the slow ones' latencies
}

// kindLatency is the baseline of one kind of request.
type kindLatency struct {
	start  time.Time       // of the current spell
	n      int             // requests in the current spell
	kept   []time.Duration // every stride-th of them, at most spellKept
	stride int
	// medians are those of the last spells with enough requests, a ring;
	// next is where the next goes.
	medians [baselineSpells]spellMedian
	next    int
}

type spellMedian struct {
	start time.Time
	d     time.Duration
}

// observe records that a request of kind, sent at start, was answered at
// end, and reports whether the requests answered lately were slow, with
// the slow ones' mean latency. A request sent before since (the last
// decrease of the rate, which it could not reflect) feeds its kind's
// baseline only.
func (l *latency) observe(kind string, start, end, since time.Time) (bool, time.Duration) {
	k := l.kind(kind, end)
	if k == nil {
		return false, 0
	}
	d := end.Sub(start)
	k.add(end, d)
	base, ok := k.baseline(end)
	if !ok || start.Before(since) {
		return false, 0
	}
	l.advance(end)
	s := &l.slots[l.cur]
	s.n++
	if d > max(slowFloor, slowFactor*base) {
		s.slow++
		s.slowSum += d
	}
	return l.slow()
}

// slow reports whether the requests of the last fastWindow were slow, with
// the slow ones' mean latency.
func (l *latency) slow() (bool, time.Duration) {
	n, slow, sum := 0, 0, time.Duration(0)
	newest, oldest := -1, -1 // the ages of the newest and oldest slots with slow requests
	for age := range fastSlots {
		s := l.slots[(l.cur-age+fastSlots)%fastSlots]
		n, slow, sum = n+s.n, slow+s.slow, sum+s.slowSum
		if s.slow > 0 {
			if newest < 0 {
				newest = age
			}
			oldest = age
		}
	}
	if n < fastMinSamples || 2*slow <= n || time.Duration(oldest-newest)*slotLen < fastMinSpan {
		return false, 0
	}
	return true, sum / time.Duration(slow)
}

// advance moves the window on to now.
func (l *latency) advance(now time.Time) {
	steps := int(now.Sub(l.curStart) / slotLen)
	if steps <= 0 {
		return
	}
	if steps >= fastSlots {
		l.reset(now)
		return
	}
	for range steps {
		l.cur = (l.cur + 1) % fastSlots
		l.slots[l.cur] = slot{}
	}
	l.curStart = l.curStart.Add(time.Duration(steps) * slotLen)
}

// reset empties the window: after a decrease of the rate, only requests
// sent since count.
func (l *latency) reset(now time.Time) {
	l.slots = [fastSlots]slot{}
	l.curStart = now
}

// kind returns the baseline of name, made at its first request; nil when
// maxKinds are measured already.
func (l *latency) kind(name string, now time.Time) *kindLatency {
	if k := l.kinds[name]; k != nil {
		return k
	}
	if l.kinds == nil {
		l.kinds = map[string]*kindLatency{}
	}
	if len(l.kinds) >= maxKinds {
		for n, k := range l.kinds {
			if now.Sub(k.start) > baselineSpan {
				delete(l.kinds, n)
			}
		}
		if len(l.kinds) >= maxKinds {
			return nil
		}
	}
	k := &kindLatency{stride: 1, kept: make([]time.Duration, 0, spellKept)}
	l.kinds[name] = k
	return k
}

// add records a latency d seen at now.
func (k *kindLatency) add(now time.Time, d time.Duration) {
	if now.Sub(k.start) >= spellLen {
		k.close()
		k.start, k.n, k.stride, k.kept = now, 0, 1, k.kept[:0]
	}
	if k.n%k.stride == 0 && len(k.kept) == spellKept {
		// Full: keep every other, and every other from now on, so
		// that what is kept spans the spell.
		for i := range spellKept / 2 {
			k.kept[i] = k.kept[2*i]
		}
		k.kept = k.kept[:spellKept/2]
		k.stride *= 2
	}
	if k.n%k.stride == 0 {
		k.kept = append(k.kept, d)
	}
	k.n++
}

// close keeps the current spell's median, if it held enough requests.
func (k *kindLatency) close() {
	if k.n < baselineMinSamples {
		return
	}
	s := slices.Clone(k.kept)
	slices.Sort(s)
	k.medians[k.next] = spellMedian{start: k.start, d: s[len(s)/2]}
	k.next = (k.next + 1) % baselineSpells
}

// baseline returns the lowest median of the spells of the last
// baselineSpan, and false while there is none.
func (k *kindLatency) baseline(now time.Time) (time.Duration, bool) {
	var best time.Duration
	ok := false
	for _, m := range k.medians {
		if m.start.IsZero() || now.Sub(m.start) > baselineSpan {
			continue
		}
		if !ok || m.d < best {
			best, ok = m.d, true
		}
	}
	return best, ok
}

// longRunning reports whether requests of the subresource sub last as
// long as their stream or session.
func longRunning(sub string) bool {
	switch sub {
	case "exec", "attach", "portforward", "proxy", "log":
		return true
	}
	return false
}

// measuredKind returns the kind of req whose latency the budget measures
// (verb, group, resource and subresource), and false for those it does
// not measure: watches and the other long-running requests, whose
// response takes as long as the server has something to stream; lists
// and deletecollections, whose latency grows with the collection and
// with where the server reads it from (its watch cache or etcd); and
// what is not a resource request (discovery, OpenAPI, health).
func measuredKind(req *http.Request) (string, bool) {
	if isWatch(req.URL.RawQuery) {
		return "", false
	}
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	group := ""
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		group, parts = parts[1], parts[3:]
	default:
		return "", false
	}
	if len(parts) == 0 || parts[0] == "watch" || parts[0] == "proxy" {
		return "", false
	}
	if len(parts) >= 3 && parts[0] == "namespaces" && parts[2] != "status" && parts[2] != "finalize" {
		parts = parts[2:] // a namespaced resource, not the namespace's own subresource
	}
	named, sub := len(parts) >= 2, ""
	if len(parts) >= 3 {
		sub = parts[2]
	}
	if longRunning(sub) {
		return "", false
	}
	verb := ""
	switch {
	case req.Method == http.MethodGet && named:
		verb = "get"
	case req.Method == http.MethodPost:
		verb = "create"
	case req.Method == http.MethodPut:
		verb = "update"
	case req.Method == http.MethodPatch:
		verb = "patch"
	case req.Method == http.MethodDelete && named:
		verb = "delete"
	default:
		return "", false
	}
	return verb + " " + group + "/" + parts[0] + "/" + sub, true
}

// observed records the latency of a measured request (see measuredKind),
// sent at start and answered now, of p's lane and controller; when the
// requests answered lately were slow, it lowers the rate as PushedBack
// does, with p's Reason ReasonLatency.
func (b *Budget) observed(kind string, start time.Time, p Pushback) {
	b.mu.Lock()
	now := b.clock.Now()
	slow, mean := b.lat.observe(kind, start, now, b.s.lastDecrease)
	changed := false
	if slow {
		changed = b.s.pushedBack(now)
		b.lat.reset(now)
		p.Reason, p.Latency, p.Rate = ReasonLatency, mean, b.s.rate
	}
	b.mu.Unlock()
	if !slow {
		return
	}
	b.metrics().pushedBack(p.Lane, p.Controller, ReasonLatency)
	if changed && b.onPushback != nil {
		b.onPushback(p)
	}
}
