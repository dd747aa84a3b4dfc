package cache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/opkit-dev/opkit/internal/cacheaccess"
)

// defaultMutationCheckInterval is MutationOptions.Interval's default.
const defaultMutationCheckInterval = time.Second

// MutationOptions configure the mutation detector, which finds cached
// objects that a reader modified in place. It costs a deep copy of every
// cached object and a comparison of each every Interval: meant for tests.
// A modification is reported once, as a *MutationError naming the
// object's kind, namespace/name and the changed fields (such as data.k),
// with a diff. Under go test -race, the periodic comparison also makes
// the race detector report the modification, with the writer's stack.
type MutationOptions struct {
	// Detect keeps a deep copy of each object as it enters the cache, and
	// compares the cached object with it every Interval, on
	// Cache.CheckMutations, and when a watch event replaces the object (so
	// that an object modified and then written back is caught, though its
	// write's event replaces it before the next check). Defaults to false,
	// or true when the OPKIT_CACHE_MUTATION_DETECTOR variable is "true".
	Detect bool
	// TraceReads makes Lister reads record, per object, the first
	// function outside the cache that read it, so that a report says
	// where the modified object was read ("it was read at <file:line> by
	// <function>"). It costs a stack walk per object read: a debugging
	// mode, not for production. Defaults to false, or true when OPKIT_CACHE_MUTATION_TRACE
	// is "1" or "true".
	TraceReads bool
	// Interval is how often the cache compares while it runs; negative
	// means only on Cache.CheckMutations. Defaults to 1s.
	Interval time.Duration
	// OnMutation receives each modification found by a periodic check or
	// when the object was replaced, once, from the goroutine of the
	// periodic check; a replaced object's report wakes it at once. With a
	// negative Interval, reports go only to Cache.CheckMutations' result.
	// Defaults to panicking with the error's message;
	// testenv.ReportMutations fails the running test instead.
	OnMutation func(*MutationError)
}

func (o *MutationOptions) defaults() {
	o.Detect = o.Detect || os.Getenv(cacheaccess.MutationDetectorEnv) == "true"
	t := os.Getenv(cacheaccess.MutationTraceEnv)
	o.TraceReads = o.TraceReads || t == "1" || t == "true"
	if o.Interval == 0 {
		o.Interval = defaultMutationCheckInterval
	}
	if o.OnMutation == nil {
		o.OnMutation = func(err *MutationError) { panic(err.Error()) }
	}
}

// MutationError reports a cached object that was modified in place.
type MutationError struct {
	GVK             schema.GroupVersionKind
	Namespace, Name string
	// Fields are the paths, in the object's JSON form, that changed, such
	// as "data.k" or "metadata.labels.app".
	Fields []string
	// Diff has a line pair per changed field: "- path: <value as cached>"
	// and "+ path: <value now>", values in JSON.
	Diff string
	// ReadAt lists where Listers handed the object out, as
	// "file:line by function", with TraceReads on; else nil.
	ReadAt []string
	// Cluster names the member cluster whose cache holds the object, in
	// the reports a fleet's member caches make (package pkg/fleet); else
	// "".
	Cluster string
	// replaced: found when a watch event replaced or removed the object,
	// not by a comparison of the objects still cached.
	replaced bool
}

func (e *MutationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cache: a cached %s %s%s was modified in place (changed: %s)",
		e.GVK.Kind, objectKey(e.Namespace, e.Name), ofMember(e.Cluster), strings.Join(e.Fields, ", "))
	if e.replaced {
		b.WriteString(" before a watch event replaced it, as when a reader writes back the object it modified")
	}
	b.WriteString("; objects from a Lister are shared: DeepCopy before modifying")
	if len(e.ReadAt) > 0 {
		fmt.Fprintf(&b, "; it was read at %s", strings.Join(e.ReadAt, "; "))
	} else {
		fmt.Fprintf(&b, "; run with %s=1 to learn where it was read", cacheaccess.MutationTraceEnv)
	}
	fmt.Fprintf(&b, "\n%s (-cached +now):\n%s", e.GVK, e.Diff)
	return b.String()
}

// ofMember says which member cluster's cache, if a fleet's, a report
// is about.
func ofMember(cluster string) string {
	if cluster == "" {
		return ""
	}
	return fmt.Sprintf(" of member cluster %q", cluster)
}

func objectKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// detector keeps, per store key, the object last ingested and a deep copy
// of it as it was then.
//
// An entry is compared when a newer object of its key replaces it, or it is
// forgotten, as well as by check: a reader that modifies a cached object
// and writes it back has the write's watch event replace the object, often
// before any check.
type detector struct {
	gvk schema.GroupVersionKind
	// found, if not nil, is signalled without blocking when pending grows.
	found   chan<- struct{}
	mu      sync.Mutex
	entries map[string]*ingested
	// pending are the reports of replaced or forgotten entries, until
	// check returns them.
	pending []*MutationError
}

type ingested struct {
	obj, copy apiruntime.Object
	readAt    []string
}

// newDetector returns the detector of objects of kind gvk, which signals
// found, if not nil, when a replaced object turns out modified.
func newDetector(gvk schema.GroupVersionKind, found chan<- struct{}) *detector {
	return &detector{gvk: gvk, found: found, entries: map[string]*ingested{}}
}

// wrap returns a transform that runs next and then records its result.
func (d *detector) wrap(next toolscache.TransformFunc) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		obj, err := next(obj)
		if err != nil {
			return nil, err
		}
		if o, ok := obj.(apiruntime.Object); ok {
			if key, err := toolscache.MetaNamespaceKeyFunc(o); err == nil {
				d.record(key, o)
			}
		}
		return obj, nil
	}
}

// record keeps obj, as it is now, under key, in place of what was kept:
// objects an informer ingests (wrap), and objects that enter a cache
// otherwise (LazyLister's fetches).
func (d *detector) record(key string, obj apiruntime.Object) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.retire(key)
	d.entries[key] = &ingested{obj: obj, copy: obj.DeepCopyObject()}
}

// forget stops watching what is kept under key.
func (d *detector) forget(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.retire(key)
	delete(d.entries, key)
}

// retire compares what is kept under key, about to be replaced or
// dropped, with its copy, and keeps a report for check if it was modified.
// The caller holds d.mu.
func (d *detector) retire(key string) {
	e := d.entries[key]
	if e == nil || reflect.DeepEqual(e.obj, e.copy) {
		return
	}
	r := d.report(e)
	r.replaced = true
	d.pending = append(d.pending, r)
	if d.found != nil {
		select {
		case d.found <- struct{}{}:
		default:
		}
	}
}

// check returns an error per object modified since it was ingested or last
// reported, and takes a new copy of each, so that a modification is
// reported once; and the reports of modified objects replaced or forgotten
// since the last check.
func (d *detector) check() []*MutationError {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.pending
	d.pending = nil
	for _, e := range d.entries {
		if reflect.DeepEqual(e.obj, e.copy) {
			continue
		}
		out = append(out, d.report(e))
		e.copy = e.obj.DeepCopyObject()
	}
	slices.SortFunc(out, func(a, b *MutationError) int {
		return strings.Compare(objectKey(a.Namespace, a.Name), objectKey(b.Namespace, b.Name))
	})
	return out
}

func (d *detector) report(e *ingested) *MutationError {
	was, _ := apiruntime.DefaultUnstructuredConverter.ToUnstructured(e.copy)
	now, _ := apiruntime.DefaultUnstructuredConverter.ToUnstructured(e.obj)
	var diff strings.Builder
	fields := changedFields("", was, now, &diff)
	err := &MutationError{GVK: d.gvk, Fields: fields, Diff: diff.String(), ReadAt: slices.Clone(e.readAt)}
	if m, ok := e.obj.(Object); ok {
		err.Namespace, err.Name = m.GetNamespace(), m.GetName()
	}
	return err
}

// changedFields returns the paths below prefix at which a and b differ, and
// writes a line pair per path to diff: "- path: <a's value as JSON>" and
// "+ path: <b's value>". It is written here, not with go-cmp, because
// go-cmp's reflection on methods keeps the linker from dropping unused
// methods: linked into an operator, it cost 26 MB of binary and 15 MiB of
// RSS.
func changedFields(prefix string, a, b any, diff *strings.Builder) []string {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if !aok || !bok {
		if reflect.DeepEqual(a, b) {
			return nil
		}
		if prefix == "" {
			prefix = "(the whole object)"
		}
		fmt.Fprintf(diff, "- %s: %s\n+ %s: %s\n", prefix, jsonOf(a), prefix, jsonOf(b))
		return []string{prefix}
	}
	var out []string
	for _, k := range sortedKeys(am, bm) {
		out = append(out, changedFields(strings.TrimPrefix(prefix+"."+k, "."), am[k], bm[k], diff)...)
	}
	return out
}

// jsonOf spells v as JSON; nil, a field that is absent, as "(absent)".
func jsonOf(v any) string {
	if v == nil {
		return "(absent)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}

func sortedKeys(a, b map[string]any) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// read records where obj was handed out: the first caller outside this
// package. obj is the object ingested, or, from a metadata-only store,
// which packs what it holds, a new object made from it: one of the same
// resourceVersion.
func (d *detector) read(obj Object) {
	key := objectKey(obj.GetNamespace(), obj.GetName())
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.entries[key]
	if e == nil || len(e.readAt) >= 5 {
		return
	}
	if m, ok := e.obj.(Object); e.obj != apiruntime.Object(obj) && (!ok || m.GetResourceVersion() != obj.GetResourceVersion()) {
		return
	}
	if site := readSite(); site != "" && !slices.Contains(e.readAt, site) {
		e.readAt = append(e.readAt, site)
	}
}

func readSite() string {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, "github.com/opkit-dev/opkit/pkg/cache.") {
			return fmt.Sprintf("%s:%d by %s", f.File, f.Line, f.Function)
		}
		if !more {
			return ""
		}
	}
}

// CheckMutations compares every cached object with the copy kept when it
// entered the cache, and returns an error per object modified since (or
// since it was last reported), each a *MutationError (see errors.As), or
// nil. With MutationOptions.Detect off it returns nil.
func (c *Cache) CheckMutations() error {
	var errs []error
	for _, d := range c.detectors() {
		for _, err := range d.check() {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (c *Cache) detectors() []*detector {
	c.mu.Lock()
	regs := slices.Clone(c.regs)
	c.mu.Unlock()
	c.mu.Lock()
	out := slices.Clone(c.lazyDetectors)
	c.mu.Unlock()
	for _, r := range regs {
		if v := r.view.Load(); v != nil {
			for _, i := range v.informers {
				if i.detector != nil {
					out = append(out, i.detector)
				}
			}
		}
	}
	return out
}

// checkMutations reports through OnMutation what a check finds, every
// Interval, and as soon as a detector found a replaced object modified,
// until ctx ends.
func (c *Cache) checkMutations(ctx context.Context) {
	t := time.NewTicker(c.opts.Mutations.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.mutationFound:
		}
		for _, d := range c.detectors() {
			for _, err := range d.check() {
				c.opts.Mutations.OnMutation(err)
			}
		}
	}
}

// traceRead records where the Lister handed obj out, with TraceReads on.
func (r *registration) traceRead(v *view, obj Object) {
	i := v.informers[0]
	if v.byNamespace != nil {
		i = v.byNamespace[obj.GetNamespace()]
	}
	if i != nil && i.detector != nil {
		i.detector.read(obj)
	}
}
