package cache

import (
	"fmt"
	"os"
	"runtime/debug"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/opkit-dev/opkit/internal/cacheaccess"
	imetrics "github.com/opkit-dev/opkit/internal/metrics"
)

// UnregisteredReadOptions say what a read by kind (such as a read
// through the cached client of package pkg/cachedclient) of a kind nobody
// registered does besides returning an error that wraps ErrNotRegistered.
// Always: the first such read of each kind and form is logged at V(0),
// and every one is counted in opkit_cache_unregistered_reads_total. With Fail on, each
// is also reported to OnRead, so that a test fails even when the reader
// swallows the error, as a webhook that admits on any error does.
type UnregisteredReadOptions struct {
	// Fail reports every read of a kind nobody registered to OnRead.
	// Defaults to false, or true when the OPKIT_CACHE_FAIL_UNREGISTERED_READS
	// variable is "true": meant for tests.
	Fail bool
	// OnRead receives each report, on the reading goroutine, before the
	// read returns its error. Defaults to panicking with the report's
	// message on a goroutine of its own, which no recover in the reader
	// (a webhook server's, a controller's) can catch: the test binary
	// ends, naming the kind, the registration to add and where it was
	// read. testenv.ReportUnregisteredReads fails the running test instead.
	OnRead func(*UnregisteredReadError)
}

func (o *UnregisteredReadOptions) defaults() {
	o.Fail = o.Fail || os.Getenv(cacheaccess.UnregisteredReadsEnv) == "true"
	if o.OnRead == nil {
		o.OnRead = func(err *UnregisteredReadError) {
			msg := err.Error()
			go panic(msg)
		}
	}
}

// UnregisteredReadError reports a read of a kind nobody registered, with
// UnregisteredReadOptions.Fail on.
type UnregisteredReadError struct {
	GVK schema.GroupVersionKind
	// Form is the form the kind was read in: "typed", "metadata" or
	// "unstructured", as TypeStatus.Form.
	Form string
	// Err is the error the reader got: it wraps ErrNotRegistered and says
	// how to register the kind.
	Err error
	// Stack is the reading goroutine's stack.
	Stack string
	// Cluster names the member cluster whose cache was read, in the
	// reports a fleet's member caches make (package pkg/fleet); else "".
	Cluster string
}

func (e *UnregisteredReadError) Error() string {
	return fmt.Sprintf("cache: read of a kind nobody registered%s: %v; the reader got this error, and may have swallowed it: production would fail the same way\nread at:\n%s", ofMember(e.Cluster), e.Err, e.Stack)
}

func (e *UnregisteredReadError) Unwrap() error { return e.Err }

// unregisteredReads remembers the kinds whose unregistered reads were
// logged, so that each is logged once.
type unregisteredReads struct {
	mu     sync.Mutex
	logged map[unregisteredKey]bool
}

type unregisteredKey struct {
	gvk  schema.GroupVersionKind
	form form
}

// unregisteredRead logs (once per kind and form), counts and, with
// UnregisteredReadOptions.Fail, reports the read of gvk in form f, which
// failed with err; it returns err.
func (c *Cache) unregisteredRead(gvk schema.GroupVersionKind, f form, err error) error {
	c.metrics.unregisteredRead(gvk, f)
	k := unregisteredKey{gvk, f}
	c.unregistered.mu.Lock()
	first := !c.unregistered.logged[k]
	if first {
		c.unregistered.logged[k] = true
	}
	c.unregistered.mu.Unlock()
	if first {
		c.log.Error(err, "Read of a kind nobody registered; register it before Start (later reads of it are counted, not logged)",
			"gvk", gvk.String(), "form", f.String(), "metric", imetrics.CacheUnregisteredReads)
	}
	if o := c.opts.UnregisteredReads; o.Fail {
		o.OnRead(&UnregisteredReadError{GVK: gvk, Form: f.String(), Err: err, Stack: string(debug.Stack())})
	}
	return err
}
