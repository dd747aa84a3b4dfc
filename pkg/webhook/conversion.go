package webhook

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	crconversion "sigs.k8s.io/controller-runtime/pkg/conversion"
	whconversion "sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	"github.com/opkit-dev/opkit/internal/bodybudget"
	"github.com/opkit-dev/opkit/pkg/manager"
)

// ConversionPath is the path the conversion webhook of every kind is served
// at, kubebuilder's: a CRD's spec.conversion.webhook.clientConfig names it.
const ConversionPath = "/convert"

// Hub is the version of a kind that every other version converts to and
// from, in kubebuilder's style: a type with a Hub() method. It is
// controller-runtime's conversion.Hub.
type Hub = crconversion.Hub

// Convertible is a version of a kind that converts itself to and from the
// hub, in kubebuilder's style. It is controller-runtime's
// conversion.Convertible.
type Convertible = crconversion.Convertible

// Spoke converts one version of a kind to and from the hub H. SpokeFuncs
// makes one from two typed functions. It is controller-runtime's
// conversion.SpokeConverter.
type Spoke[H runtime.Object] = whconversion.SpokeConverter[H]

// SpokeFuncs returns the Spoke of version S: to converts an S into the hub,
// from converts the hub into an S. Each fills dst, a new object, from src,
// which it must not modify; an error refuses the conversion and its text
// reaches the API server's client.
func SpokeFuncs[H, S client.Object](
	to func(ctx context.Context, src S, dst H) error,
	from func(ctx context.Context, src H, dst S) error,
) Spoke[H] {
	spoke, err := newObject[S]()
	if err != nil {
		// RegisterConversion reports the missing spoke's version.
		return nil
	}
	return whconversion.NewSpokeConverter(spoke, from, to)
}

// Conversion is how the versions of one kind convert, through the hub
// version H.
type Conversion[H runtime.Object] struct {
	// Spokes convert each version other than H, one Spoke per version.
	// Defaults to none: kubebuilder's style, where H implements Hub and
	// every other version of the kind in the manager's scheme implements
	// Convertible, so a kubebuilder project's API types port unchanged.
	Spokes []Spoke[H]
}

// RegisterConversion serves the conversion between the versions of H's
// kind on m's webhook server at ConversionPath. H is a pointer to the hub
// version's struct, and every version of the kind is in m's scheme.
// RegisterConversion checks that each version converts (with
// controller-runtime's IsConvertible in kubebuilder's style) and returns an
// error naming the type and the missing method rather than failing on the
// first request. The kinds of one server share its handler, one
// RegisterConversion call per kind; a kind registered twice is
// ErrRegistered. It may be called before or after Start, but not
// concurrently with itself.
func RegisterConversion[H runtime.Object](m *manager.Manager, c Conversion[H]) error {
	hub, err := newObject[H]()
	if err != nil {
		return err
	}
	srv := m.WebhookServer()
	if srv == nil {
		return fmt.Errorf("webhook: register conversion of %T: %w: set manager.Options.Webhook.Port, such as 9443", hub, ErrNoServer)
	}
	gvk, err := apiutil.GVKForObject(hub, m.Scheme())
	if err != nil {
		return fmt.Errorf("webhook: register conversion of %T: add the type to the manager's scheme (manager.Options.Scheme): %w", hub, err)
	}
	var conv whconversion.Converter // nil: by the types' methods
	if len(c.Spokes) == 0 {
		err = checkConvertible(m.Scheme(), hub, gvk)
	} else {
		conv, err = spokeConverter(m.Scheme(), hub, c.Spokes)
	}
	if err != nil {
		return fmt.Errorf("webhook: register conversion of %T: %w", hub, err)
	}
	h, err := conversionHandler(m)
	if err != nil {
		return err
	}
	if err := h.add(gvk.GroupKind(), conv); err != nil {
		return fmt.Errorf("webhook: register conversion of %T: %w", hub, err)
	}
	return nil
}

func spokeConverter[H runtime.Object](scheme *runtime.Scheme, hub H, spokes []Spoke[H]) (whconversion.Converter, error) {
	for i, s := range spokes {
		if s == nil {
			return nil, fmt.Errorf("Conversion.Spokes[%d] is nil: its type must be a pointer to a struct", i)
		}
	}
	conv, err := whconversion.NewHubSpokeConverter(hub, spokes...)(scheme)
	if err != nil {
		return nil, fmt.Errorf("give one Spoke per version other than the hub: %w", err)
	}
	return conv, nil
}

// checkConvertible reports what keeps hub's kind from converting by the
// types' methods, naming each type and the method it lacks.
func checkConvertible(scheme *runtime.Scheme, hub runtime.Object, gvk schema.GroupVersionKind) error {
	missing, versions, err := missingMethods(scheme, hub, gvk)
	if err != nil {
		return err
	}
	if versions < 2 {
		return fmt.Errorf("%s has one version in the manager's scheme: add the types of its other versions", gvk.GroupKind())
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s does not convert: %s", gvk.GroupKind(), strings.Join(missing, "; "))
	}
	// What controller-runtime's handler relies on, in case it asks more.
	if ok, err := whconversion.IsConvertible(scheme, hub); !ok {
		return fmt.Errorf("%s does not convert: %w", gvk.GroupKind(), err)
	}
	return nil
}

// missingMethods names each version of hub's kind that lacks what
// kubebuilder's style asks of it, and counts the versions.
func missingMethods(scheme *runtime.Scheme, hub runtime.Object, gvk schema.GroupVersionKind) (missing []string, versions int, err error) {
	for known := range scheme.AllKnownTypes() {
		if known.GroupKind() != gvk.GroupKind() {
			continue
		}
		versions++
		obj, err := scheme.New(known)
		if err != nil {
			return nil, 0, fmt.Errorf("allocate %v: %w", known, err)
		}
		_, isHub := obj.(Hub)
		_, isSpoke := obj.(Convertible)
		switch {
		case known == gvk && !isHub:
			missing = append(missing, fmt.Sprintf("%T (%s, the hub) has no method Hub()", obj, known.Version))
		case known != gvk && isHub:
			missing = append(missing, fmt.Sprintf("%T (%s) has a method Hub(), but only the hub %T may", obj, known.Version, hub))
		case known != gvk && !isSpoke:
			missing = append(missing, fmt.Sprintf("%T (%s) lacks ConvertTo(conversion.Hub) error or ConvertFrom(conversion.Hub) error", obj, known.Version))
		}
	}
	sort.Strings(missing)
	return missing, versions, nil
}

// converters is the handler at ConversionPath: a registry that may grow
// while it serves, and the bounds on what a request may cost.
type converters struct {
	scheme  *runtime.Scheme
	decoder *whconversion.Decoder
	log     logr.Logger
	// inFlight bounds the bytes of request bodies being read or converted
	// at once (see conversionBudget).
	inFlight *bodybudget.Budget

	mu sync.Mutex
	// byKind holds every registered kind; a nil Converter converts by the
	// types' methods, as controller-runtime's handler does when
	// GetConverter finds none.
	byKind map[schema.GroupKind]whconversion.Converter
}

var _ whconversion.Registry = (*converters)(nil)

// lookupKey marks an in-process request that asks the handler at
// ConversionPath for itself; no HTTP client can set a context value.
type lookupKey struct{}

// conversionHandler returns the handler at ConversionPath of m's server,
// registering one on first use. The server keeps no reference to it but
// the mux's, so it is found by asking it, in process.
func conversionHandler(m *manager.Manager) (*converters, error) {
	srv := m.WebhookServer()
	var found *converters
	req := &http.Request{Method: http.MethodPost, URL: &url.URL{Path: ConversionPath}, Header: http.Header{}}
	req = req.WithContext(context.WithValue(context.Background(), lookupKey{}, &found))
	// The mux is nil until the server's first Register or Start.
	if h, pattern := handlerAt(srv.WebhookMux(), req); pattern != "" {
		h.ServeHTTP(discard{}, req)
		if found == nil {
			return nil, fmt.Errorf("webhook: register conversion: a handler not made by RegisterConversion is at %s: %w", ConversionPath, ErrRegistered)
		}
		return found, nil
	}
	found = &converters{
		scheme:   m.Scheme(),
		decoder:  whconversion.NewDecoder(m.Scheme()),
		log:      m.Logger().WithName("webhook").WithValues("path", ConversionPath),
		inFlight: bodybudget.New(conversionBudget, maxConversionBody),
		byKind:   map[schema.GroupKind]whconversion.Converter{},
	}
	if err := register(srv, ConversionPath, found); err != nil {
		return nil, err
	}
	return found, nil
}

func (c *converters) add(gk schema.GroupKind, conv whconversion.Converter) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKind[gk]; ok {
		return fmt.Errorf("%s at %s: %w", gk, ConversionPath, ErrRegistered)
	}
	c.byKind[gk] = conv
	return nil
}

// RegisterConverter is not used: add registers.
func (c *converters) RegisterConverter(gk schema.GroupKind, conv whconversion.Converter) error {
	return c.add(gk, conv)
}

// GetConverter returns the Converter of gk, if made from Spokes.
func (c *converters) GetConverter(gk schema.GroupKind) (whconversion.Converter, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	conv := c.byKind[gk]
	return conv, conv != nil
}
