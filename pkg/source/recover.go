package source

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/go-logr/logr"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// HandlerPanic describes a panic that a source recovered from a handler, a
// map function or a predicate of yours.
type HandlerPanic struct {
	// Source names the source, as its String method does.
	Source string
	// Type names what the source delivers: the kind of a Kind source
	// ("apps/v1/Deployment"), the Go type of an Informer's objects or of a
	// Channel's values.
	Type string
	// Event is the informer event being handled: "create", "update" or
	// "delete"; "receive" for a Channel value.
	Event string
	// Namespace and Name are the object's, empty for a Channel value.
	Namespace, Name string
	// Value is what was passed to panic; Stack the panicking goroutine's
	// stack.
	Value any
	Stack []byte
}

// Error describes the panic in one line, without the stack.
func (p *HandlerPanic) Error() string {
	obj := ""
	if p.Name != "" {
		obj = " of " + p.Namespace + "/" + p.Name
		if p.Namespace == "" {
			obj = " of " + p.Name
		}
	}
	return fmt.Sprintf("%s: handler panicked on the %s event%s: %v [recovered]", p.Source, p.Event, obj, p.Value)
}

type panicObserverKey struct{}

// WithPanicObserver returns a copy of ctx under which every source started
// with it calls observe with each panic it recovered from a handler, a map
// function or a predicate. A controller starts its sources so, to log the
// panic with its own name and count it. observe runs on the goroutine that
// panicked (for informer sources, the informer's delivery goroutine): it
// must not block. It may panic itself to crash the process, as a
// controller with Options.CrashOnPanic does.
//
// Without an observer, a recovered panic is logged through the logger in
// Start's context (logr.FromContext), or else through client-go's
// k8s.io/apimachinery/pkg/util/runtime.HandleError, with its stack.
func WithPanicObserver(ctx context.Context, observe func(*HandlerPanic)) context.Context {
	return context.WithValue(ctx, panicObserverKey{}, observe)
}

// panicObserver returns the observer of recovered panics for sources
// started with ctx.
func panicObserver(ctx context.Context) func(*HandlerPanic) {
	if f, ok := ctx.Value(panicObserverKey{}).(func(*HandlerPanic)); ok && f != nil {
		return f
	}
	if log, err := logr.FromContext(ctx); err == nil {
		return func(p *HandlerPanic) {
			log.Error(p, "Handler panicked; recovered, the event is dropped", "source", p.Source,
				"namespace", p.Namespace, "name", p.Name, "stack", string(p.Stack))
		}
	}
	return func(p *HandlerPanic) {
		utilruntime.HandleError(fmt.Errorf("%w; the event is dropped\n%s", p, p.Stack))
	}
}

// recovered builds the HandlerPanic of r, recovered by a source.
func recovered(r any, source, typ, event, namespace, name string) *HandlerPanic {
	return &HandlerPanic{Source: source, Type: typ, Event: event, Namespace: namespace, Name: name, Value: r, Stack: debug.Stack()}
}
