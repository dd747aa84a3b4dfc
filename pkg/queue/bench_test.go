package queue_test

// Benchmarks of opkit's queue side by side with its peers, in one run so that
// their ratios mean something on a noisy machine. Every row is named
// Benchmark<Workload>/<impl>, impl one of:
//
//   - opkit: this package, with fairness (tenant = namespace) and aging on,
//     as a controller uses it.
//   - clientgo: client-go's rate-limiting workqueue, as controllers built on
//     client-go use it.
//   - ctrlruntime: controller-runtime's priority queue.
//   - floor: a bare de-duplicating queue (floorQueue below), the least any
//     queue with client-go's contract can cost.
//
// Every row reports ns/item and allocs/item besides the usual figures; 'make
// bench' runs them all and hack/benchtable prints the ratios.

import (
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"

	"github.com/opkit-dev/opkit/pkg/metrics"
	"github.com/opkit-dev/opkit/pkg/queue"
)

// key is the shape of controller-runtime's reconcile.Request.
type key struct{ Namespace, Name string }

// namespaces is how many namespaces, and so opkit tenants, the keys spread
// over.
const namespaces = 10

// keys returns the benchmark keys, built once; workloads use a prefix.
var keys = sync.OnceValue(func() []key {
	ns := make([]string, namespaces)
	for i := range ns {
		ns[i] = "ns-" + strconv.Itoa(i)
	}
	ks := make([]key, 100_000)
	for i := range ks {
		ks[i] = key{Namespace: ns[i%namespaces], Name: "obj-" + strconv.Itoa(i)}
	}
	return ks
})

// workQueue is what the workloads need of a queue: one adapter per
// implementation. A priority other than queue.NormalPriority is dropped by
// the queues that have none.
type workQueue interface {
	add(k key, priority int)
	get() (k key, shutdown bool)
	done(k key)
	len() int
	shutDown()
}

type impl struct {
	name string
	new  func(b *testing.B, withMetrics bool) workQueue
}

var impls = []impl{
	{"opkit", newOpkit},
	{"clientgo", newClientGo},
	{"ctrlruntime", newCtrlRuntime},
	{"floor", newFloor},
}

// forEachQueue runs workload once per implementation, each on a new queue
// that is shut down afterwards. It waits for every goroutine the row started
// to end, so that none runs on into the next row.
func forEachQueue(b *testing.B, withMetrics bool, workload func(*testing.B, workQueue)) {
	for _, im := range impls {
		b.Run(im.name, func(b *testing.B) {
			b.ReportAllocs()
			before := runtime.NumGoroutine()
			q := im.new(b, withMetrics)
			defer waitForGoroutines(b, before)
			defer q.shutDown()
			workload(b, q)
		})
	}
}

// waitForGoroutines waits until no more than n goroutines run. Queues end
// their goroutines asynchronously after ShutDown; the bound only keeps a leak
// from hanging the run, and a leak is logged rather than failed.
func waitForGoroutines(b *testing.B, n int) {
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > n; {
		if time.Now().After(deadline) {
			b.Logf("%d goroutines still running after the queue was shut down", runtime.NumGoroutine()-n)
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// measure runs op in the benchmark loop, after one untimed call that brings
// the queue to its steady state (grown maps, recycled nodes), and reports
// the time and allocations per item, op handling items items.
func measure(b *testing.B, items int, op func()) {
	op()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		op()
	}
	runtime.ReadMemStats(&after)
	n := float64(b.N) * float64(items)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/item")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/item")
}

// Workloads.

// BenchmarkAddGetDone: one goroutine adds 1,000 distinct keys, then gets and
// finishes them all.
func BenchmarkAddGetDone(b *testing.B) { forEachQueue(b, false, addGetDone) }

func addGetDone(b *testing.B, q workQueue) {
	ks := keys()[:1000]
	measure(b, len(ks), func() {
		for _, k := range ks {
			q.add(k, queue.NormalPriority)
		}
		for range ks {
			k, _ := q.get()
			q.done(k)
		}
	})
}

// BenchmarkContended: P producers add 100,000 distinct keys between them
// while P workers get and finish them.
func BenchmarkContended(b *testing.B) {
	for _, p := range []int{1, 2, 8} {
		b.Run(fmt.Sprintf("P=%d", p), func(b *testing.B) {
			forEachQueue(b, false, func(b *testing.B, q workQueue) { contended(b, q, p) })
		})
	}
}

func contended(b *testing.B, q workQueue, p int) {
	ks := keys()
	share := (len(ks) + p - 1) / p
	producers := newCrew(p, func(i int) {
		for _, k := range ks[min(i*share, len(ks)):min((i+1)*share, len(ks))] {
			q.add(k, queue.NormalPriority)
		}
	})
	defer producers.stop()

	// The workers run until ShutDown; the one that finishes the last key of
	// a round says so.
	var finished atomic.Int64
	roundDone := make(chan struct{}, 1)
	for range p {
		go func() {
			for {
				k, shutdown := q.get()
				if shutdown {
					return
				}
				q.done(k)
				if finished.Add(1)%int64(len(ks)) == 0 {
					roundDone <- struct{}{}
				}
			}
		}()
	}

	measure(b, len(ks), func() {
		producers.run()
		<-roundDone
	})
}

// BenchmarkReAdd: 8 producers each add again the 1,000 keys the queue
// already holds, which only the de-duplication sees.
func BenchmarkReAdd(b *testing.B) { forEachQueue(b, false, reAdd) }

func reAdd(b *testing.B, q workQueue) {
	const p = 8
	ks := keys()[:1000]
	for _, k := range ks {
		q.add(k, queue.NormalPriority)
	}
	producers := newCrew(p, func(int) {
		for _, k := range ks {
			q.add(k, queue.NormalPriority)
		}
	})
	defer producers.stop()

	measure(b, p*len(ks), func() {
		producers.run()
		// controller-runtime's queue applies adds in a goroutine of its own;
		// Len waits for that, so the row counts the work.
		q.len()
	})
}

// BenchmarkPreloadDrain: 100,000 keys are added, 70% at LowPriority as an
// informer's initial list would be, then one worker gets and finishes them
// all.
func BenchmarkPreloadDrain(b *testing.B) { forEachQueue(b, false, preloadDrain) }

func preloadDrain(b *testing.B, q workQueue) {
	ks := keys()
	priorities := make([]int, len(ks))
	for i := range priorities {
		// Mixed within each namespace: keys[i] is in namespace i%namespaces.
		if (i/namespaces)%10 < 7 {
			priorities[i] = queue.LowPriority
		}
	}
	measure(b, len(ks), func() {
		for i, k := range ks {
			q.add(k, priorities[i])
		}
		for range ks {
			k, _ := q.get()
			q.done(k)
		}
	})
}

// BenchmarkLatency: one producer adds a key while one worker waits in Get;
// the worker finishes the key and tells the producer, which then adds the
// next. An op is that round trip.
func BenchmarkLatency(b *testing.B) { forEachQueue(b, false, latency) }

func latency(b *testing.B, q workQueue) {
	ks := keys()[:1000]
	// Unbuffered: the worker goes back into Get while the producer wakes up,
	// so the producer usually adds to a queue with a parked worker.
	finished := make(chan struct{})
	go func() {
		for {
			k, shutdown := q.get()
			if shutdown {
				return
			}
			q.done(k)
			finished <- struct{}{}
		}
	}()
	i := 0
	measure(b, 1, func() {
		q.add(ks[i%len(ks)], queue.NormalPriority)
		<-finished
		i++
	})
}

// BenchmarkMetricsAddGetDone is AddGetDone with every queue's Prometheus
// metrics on (the floor has none).
func BenchmarkMetricsAddGetDone(b *testing.B) { forEachQueue(b, true, addGetDone) }

// BenchmarkMetricsContended is Contended at P=8 with every queue's Prometheus
// metrics on (the floor has none).
func BenchmarkMetricsContended(b *testing.B) {
	forEachQueue(b, true, func(b *testing.B, q workQueue) { contended(b, q, 8) })
}

// crew is n goroutines that each run work(i) once per call of run. They are
// started once, so that a round starts no goroutine and allocates nothing.
type crew struct {
	start []chan struct{}
	wg    sync.WaitGroup
}

func newCrew(n int, work func(i int)) *crew {
	c := &crew{start: make([]chan struct{}, n)}
	for i := range c.start {
		start := make(chan struct{})
		c.start[i] = start
		go func() {
			for range start {
				work(i)
				c.wg.Done()
			}
		}()
	}
	return c
}

// run starts a round and waits until every goroutine has done its work.
func (c *crew) run() {
	c.wg.Add(len(c.start))
	for _, start := range c.start {
		start <- struct{}{}
	}
	c.wg.Wait()
}

// stop ends the goroutines.
func (c *crew) stop() {
	for _, start := range c.start {
		close(start)
	}
}

// Adapters.
//
// Metrics are off unless asked for. client-go and controller-runtime turn
// them off for an unnamed queue, so their queues are named only then: merely
// importing controller-runtime sets client-go's global metrics provider.

const queueName = "bench"

type opkitQueue struct{ q *queue.Queue[key] }

func newOpkit(b *testing.B, withMetrics bool) workQueue {
	opts := queue.Options[key]{
		Name:   queueName,
		Tenant: func(k key) string { return k.Namespace },
	}
	if withMetrics {
		m, err := metrics.NewQueueMetrics(prometheus.NewRegistry())
		if err != nil {
			b.Fatal(err)
		}
		opts.Metrics = m
	}
	return opkitQueue{queue.New(opts)}
}

func (o opkitQueue) add(k key, priority int) {
	if priority == queue.NormalPriority {
		o.q.Add(k)
		return
	}
	o.q.AddWithOpts(queue.AddOpts{Priority: priority}, k)
}

func (o opkitQueue) get() (key, bool) {
	k, _, shutdown := o.q.Get()
	return k, shutdown
}

func (o opkitQueue) done(k key) { o.q.Done(k) }
func (o opkitQueue) len() int   { return o.q.Len() }
func (o opkitQueue) shutDown()  { o.q.ShutDown() }

type clientGoQueue struct {
	q workqueue.TypedRateLimitingInterface[key]
}

func newClientGo(b *testing.B, withMetrics bool) workQueue {
	var cfg workqueue.TypedRateLimitingQueueConfig[key]
	if withMetrics {
		cfg.Name = queueName
		cfg.MetricsProvider = newPromProvider(b)
	}
	return clientGoQueue{workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[key](), cfg)}
}

func (c clientGoQueue) add(k key, _ int) { c.q.Add(k) }
func (c clientGoQueue) get() (key, bool) { return c.q.Get() }
func (c clientGoQueue) done(k key)       { c.q.Done(k) }
func (c clientGoQueue) len() int         { return c.q.Len() }
func (c clientGoQueue) shutDown()        { c.q.ShutDown() }

type ctrlRuntimeQueue struct {
	q   priorityqueue.PriorityQueue[key]
	low *int // AddOpts takes the priority by pointer
}

func newCtrlRuntime(b *testing.B, withMetrics bool) workQueue {
	name := ""
	var opts []priorityqueue.Opt[key]
	if withMetrics {
		name = queueName
		p := newPromProvider(b)
		opts = append(opts, func(o *priorityqueue.Opts[key]) { o.MetricProvider = p })
	}
	low := queue.LowPriority
	return ctrlRuntimeQueue{q: priorityqueue.New(name, opts...), low: &low}
}

func (c ctrlRuntimeQueue) add(k key, priority int) {
	switch priority {
	case queue.NormalPriority:
		c.q.Add(k)
	case queue.LowPriority:
		c.q.AddWithOpts(priorityqueue.AddOpts{Priority: c.low}, k)
	default:
		panic("ctrlRuntimeQueue: unexpected priority " + strconv.Itoa(priority))
	}
}

func (c ctrlRuntimeQueue) get() (key, bool) {
	k, _, shutdown := c.q.GetWithPriority()
	return k, shutdown
}

func (c ctrlRuntimeQueue) done(k key) { c.q.Done(k) }
func (c ctrlRuntimeQueue) len() int   { return c.q.Len() }
func (c ctrlRuntimeQueue) shutDown()  { c.q.ShutDown() }

type floorAdapter struct{ q *floorQueue }

func newFloor(*testing.B, bool) workQueue { return floorAdapter{newFloorQueue()} }

func (f floorAdapter) add(k key, _ int) { f.q.Add(k) }
func (f floorAdapter) get() (key, bool) { return f.q.Get() }
func (f floorAdapter) done(k key)       { f.q.Done(k) }
func (f floorAdapter) len() int         { return f.q.Len() }
func (f floorAdapter) shutDown()        { f.q.ShutDown() }

// promProvider is a workqueue.MetricsProvider that records into a registry of
// its own, with the metric names and labels of controller-runtime's provider
// (sigs.k8s.io/controller-runtime/pkg/internal/metrics/workqueue.go), which
// registers globally. Its histograms have the classic buckets only, as opkit's
// provider does, so that the rows compare queues rather than histogram
// settings; controller-runtime's also keeps native histograms, which cost
// more.
type promProvider struct {
	depth, unfinished, longest *prometheus.GaugeVec
	adds, retries              *prometheus.CounterVec
	latency, workDuration      *prometheus.HistogramVec
}

func newPromProvider(b *testing.B) *promProvider {
	labels := []string{"name", "controller"}
	gauge := func(name string, labels []string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: name, Help: name}, labels)
	}
	counter := func(name string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "workqueue", Name: name, Help: name}, labels)
	}
	histogram := func(name string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "workqueue", Name: name, Help: name,
			Buckets: prometheus.ExponentialBuckets(10e-9, 10, 12),
		}, labels)
	}
	p := &promProvider{
		depth:        gauge("depth", []string{"name", "controller", "priority"}),
		unfinished:   gauge("unfinished_work_seconds", labels),
		longest:      gauge("longest_running_processor_seconds", labels),
		adds:         counter("adds_total"),
		retries:      counter("retries_total"),
		latency:      histogram("queue_duration_seconds"),
		workDuration: histogram("work_duration_seconds"),
	}
	reg := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{p.depth, p.unfinished, p.longest, p.adds, p.retries, p.latency, p.workDuration} {
		if err := reg.Register(c); err != nil {
			b.Fatal(err)
		}
	}
	return p
}

func (p *promProvider) NewDepthMetric(name string) workqueue.GaugeMetric {
	return p.depth.WithLabelValues(name, name, "") // no priority, as controller-runtime
}

func (p *promProvider) NewAddsMetric(name string) workqueue.CounterMetric {
	return p.adds.WithLabelValues(name, name)
}

func (p *promProvider) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return p.latency.WithLabelValues(name, name)
}

func (p *promProvider) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return p.workDuration.WithLabelValues(name, name)
}

func (p *promProvider) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.unfinished.WithLabelValues(name, name)
}

func (p *promProvider) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.longest.WithLabelValues(name, name)
}

func (p *promProvider) NewRetriesMetric(name string) workqueue.CounterMetric {
	return p.retries.WithLabelValues(name, name)
}

// floorQueue has the Add, Get and Done of client-go's workqueue and nothing
// else: no priorities, delays, rate limits or metrics.
type floorQueue struct {
	mu           sync.Mutex
	cond         sync.Cond // signalled when fifo gains a key or shutdown starts
	fifo         ring
	dirty        map[key]struct{} // queued, or added again while processing
	processing   map[key]struct{}
	shuttingDown bool
}

func newFloorQueue() *floorQueue {
	f := &floorQueue{dirty: map[key]struct{}{}, processing: map[key]struct{}{}}
	f.cond.L = &f.mu
	return f
}

func (f *floorQueue) Add(k key) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shuttingDown {
		return
	}
	if _, ok := f.dirty[k]; ok {
		return
	}
	f.dirty[k] = struct{}{}
	if _, ok := f.processing[k]; ok {
		return // Done queues it
	}
	f.fifo.push(k)
	f.cond.Signal()
}

// Get hands out keys, after ShutDown too, until the queue is empty.
func (f *floorQueue) Get() (key, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.fifo.n == 0 && !f.shuttingDown {
		f.cond.Wait()
	}
	if f.fifo.n == 0 {
		return key{}, true
	}
	k := f.fifo.pop()
	f.processing[k] = struct{}{}
	delete(f.dirty, k)
	return k, false
}

func (f *floorQueue) Done(k key) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.processing, k)
	if _, ok := f.dirty[k]; ok {
		f.fifo.push(k)
		f.cond.Signal()
	}
}

func (f *floorQueue) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fifo.n
}

func (f *floorQueue) ShutDown() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.shuttingDown = true
	f.cond.Broadcast()
}

// ring is a FIFO in a circular buffer whose length is a power of two, so that
// steady traffic reuses it.
type ring struct {
	buf     []key
	head, n int
}

func (r *ring) push(k key) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = k
	r.n++
}

func (r *ring) pop() key {
	k := r.buf[r.head]
	r.buf[r.head] = key{} // drop the strings for the GC
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	return k
}

func (r *ring) grow() {
	buf := make([]key, max(16, 2*len(r.buf)))
	for i := range r.n {
		buf[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
	}
	r.buf, r.head = buf, 0
}
