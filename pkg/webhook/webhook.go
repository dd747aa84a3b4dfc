package webhook

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/opkit-dev/opkit/pkg/manager"
)

// Defaulter sets defaults on an object of type T before the API server
// stores it, on create and update. It modifies obj in place; the change is
// sent back as a JSON patch. An error refuses the write (see Validator for
// errors that kubectl shows well). It is controller-runtime's
// admission.Defaulter, so an implementation written for
// ctrl.NewWebhookManagedBy works here unchanged.
type Defaulter[T runtime.Object] = admission.Defaulter[T]

// Validator decides whether the API server may create, update or delete
// an object of type T. Each method may return warnings, which reach the
// client (kubectl prints them as "Warning: ..."), whether or not it also
// returns an error. An error refuses the request: return
// apierrors.NewInvalid(groupKind, name, field.ErrorList{...}) to give the
// client each field's path and message, or apierrors.NewForbidden and the
// like for other reasons; any other error refuses with its text. It is
// controller-runtime's admission.Validator.
type Validator[T runtime.Object] = admission.Validator[T]

// Warnings are messages for the client that do not refuse the request.
type Warnings = admission.Warnings

// DefaulterFunc adapts a function to a Defaulter.
type DefaulterFunc[T runtime.Object] func(ctx context.Context, obj T) error

var _ Defaulter[runtime.Object] = DefaulterFunc[runtime.Object](nil)

// Default calls f.
func (f DefaulterFunc[T]) Default(ctx context.Context, obj T) error { return f(ctx, obj) }

// ValidatorFuncs adapts functions to a Validator. A nil function allows
// its operation without warnings.
type ValidatorFuncs[T runtime.Object] struct {
	Create func(ctx context.Context, obj T) (Warnings, error)
	Update func(ctx context.Context, oldObj, newObj T) (Warnings, error)
	Delete func(ctx context.Context, obj T) (Warnings, error)
}

var _ Validator[runtime.Object] = ValidatorFuncs[runtime.Object]{}

// ValidateCreate calls v.Create, if set.
func (v ValidatorFuncs[T]) ValidateCreate(ctx context.Context, obj T) (Warnings, error) {
	if v.Create == nil {
		return nil, nil
	}
	return v.Create(ctx, obj)
}

// ValidateUpdate calls v.Update, if set.
func (v ValidatorFuncs[T]) ValidateUpdate(ctx context.Context, oldObj, newObj T) (Warnings, error) {
	if v.Update == nil {
		return nil, nil
	}
	return v.Update(ctx, oldObj, newObj)
}

// ValidateDelete calls v.Delete, if set.
func (v ValidatorFuncs[T]) ValidateDelete(ctx context.Context, obj T) (Warnings, error) {
	if v.Delete == nil {
		return nil, nil
	}
	return v.Delete(ctx, obj)
}

// Hooks are the admission webhooks of one type T. At least one is set.
// (The name is not For, which names the controller's primary type in
// package manager.)
type Hooks[T runtime.Object] struct {
	// Defaulter, when set, is served at MutatePath.
	Defaulter Defaulter[T]
	// Validator, when set, is served at ValidatePath.
	Validator Validator[T]
}

// Errors a caller can test for with errors.Is.
var (
	// ErrNoServer: the manager has no webhook server
	// (manager.Options.Webhook.Port is 0).
	ErrNoServer = errors.New("the manager has no webhook server")
	// ErrRegistered: a handler is already registered at the path.
	ErrRegistered = errors.New("a webhook is already registered at this path")
)

// Register serves h on m's webhook server at the paths kubebuilder's
// markers name for T's kind in m's scheme: MutatePath for the Defaulter,
// ValidatePath for the Validator. T is a pointer to a struct registered in
// the manager's scheme, such as *corev1.ConfigMap. Register may be called
// before or after Start, once per type.
func Register[T runtime.Object](m *manager.Manager, h Hooks[T]) error {
	hs, err := Handlers(m, h)
	if err != nil {
		return err
	}
	for _, path := range slices.Sorted(maps.Keys(hs)) {
		if err := Serve(m, path, hs[path]); err != nil {
			return err
		}
	}
	return nil
}

// Handlers returns the admission webhooks of h as Register builds them,
// by the path Register serves each at (MutatePath, ValidatePath), without
// serving them: for serving them at other paths with Serve, as package
// fleet serves them once per member cluster. Each logs its requests as
// Register's do. It fails as Register does.
func Handlers[T runtime.Object](m *manager.Manager, h Hooks[T]) (map[string]http.Handler, error) {
	obj, err := newObject[T]()
	if err != nil {
		return nil, err
	}
	if m.WebhookServer() == nil {
		return nil, fmt.Errorf("webhook: register %T: %w: set manager.Options.Webhook.Port, such as 9443", obj, ErrNoServer)
	}
	if h.Defaulter == nil && h.Validator == nil {
		return nil, fmt.Errorf("webhook: register %T: Hooks has neither a Defaulter nor a Validator", obj)
	}
	gvk, err := apiutil.GVKForObject(obj, m.Scheme())
	if err != nil {
		return nil, fmt.Errorf("webhook: register %T: add the type to the manager's scheme (manager.Options.Scheme): %w", obj, err)
	}
	log := m.Logger().WithName("webhook").WithValues("group", gvk.Group, "version", gvk.Version, "kind", gvk.Kind)
	hs := map[string]http.Handler{}
	if h.Defaulter != nil {
		hs[MutatePath(gvk)] = logged(admission.WithDefaulter(m.Scheme(), h.Defaulter), MutatePath(gvk), log)
	}
	if h.Validator != nil {
		hs[ValidatePath(gvk)] = logged(admission.WithValidator(m.Scheme(), h.Validator), ValidatePath(gvk), log)
	}
	return hs, nil
}

// newObject returns a new T, which must be a pointer to a struct.
func newObject[T runtime.Object]() (T, error) {
	var zero T
	typ := reflect.TypeOf(zero)
	if typ == nil || typ.Kind() != reflect.Pointer || typ.Elem().Kind() != reflect.Struct {
		return zero, fmt.Errorf("webhook: register %v: the type must be a pointer to a struct, such as *corev1.ConfigMap", typ)
	}
	return reflect.New(typ.Elem()).Interface().(T), nil
}

// logged makes wh log through log, with path, and each request's
// namespace, name, operation and uid.
func logged(wh *admission.Webhook, path string, log logr.Logger) *admission.Webhook {
	log = log.WithValues("path", path)
	wh.LogConstructor = func(_ logr.Logger, req *admission.Request) logr.Logger {
		if req == nil {
			return log
		}
		return log.WithValues("namespace", req.Namespace, "name", req.Name, "operation", req.Operation, "uid", req.UID)
	}
	return wh
}

// Serve serves h on m's webhook server at pattern (a pattern of net/http's
// ServeMux, such as "/members/{member}/validate--v1-configmap"), behind
// m.GuardWebhook, as Register serves its handlers: only for the callers
// the guard lets through, with bounded bodies. A pattern registered
// already is ErrRegistered; a manager without a webhook server
// ErrNoServer.
func Serve(m *manager.Manager, pattern string, h http.Handler) error {
	if m.WebhookServer() == nil {
		return fmt.Errorf("webhook: serve %s: %w: set manager.Options.Webhook.Port, such as 9443", pattern, ErrNoServer)
	}
	return register(m.WebhookServer(), pattern, m.GuardWebhook(h))
}

// MutatePath returns the path the Defaulter of gvk is served at, as
// kubebuilder's markers and controller-runtime's builder name it:
// "/mutate-<group>-<version>-<kind>", dots in the group replaced by
// dashes and the kind in lower case, such as "/mutate-apps-v1-deployment"
// or, for the core group, "/mutate--v1-configmap".
func MutatePath(gvk schema.GroupVersionKind) string { return path("mutate", gvk) }

// ValidatePath returns the path the Validator of gvk is served at:
// "/validate-<group>-<version>-<kind>", as MutatePath.
func ValidatePath(gvk schema.GroupVersionKind) string { return path("validate", gvk) }

func path(verb string, gvk schema.GroupVersionKind) string {
	return "/" + verb + "-" + strings.ReplaceAll(gvk.Group, ".", "-") + "-" + gvk.Version + "-" + strings.ToLower(gvk.Kind)
}
