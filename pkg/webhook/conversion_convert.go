package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/go-logr/logr"
	apix "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	crconversion "sigs.k8s.io/controller-runtime/pkg/conversion"
	conversionmetrics "sigs.k8s.io/controller-runtime/pkg/webhook/conversion/metrics"
)

// serve converts a decoded review and answers it. controller-runtime's
// conversion handler decodes its own request and keeps its loop
// unexported, so the loop is here, with its semantics: a Converter
// registered for the kind, else the types' Hub and Convertible methods;
// the first error fails the whole review with its message, and a panic
// fails it as "internal error occurred during conversion", counted in
// controller_runtime_conversion_webhook_panics_total. Each review is logged
// at V(1) with uid, desiredAPIVersion, objects and the first object's
// apiVersion, kind, namespace and name; a failed one at V(0).
func (c *converters) serve(ctx context.Context, w http.ResponseWriter, review *apix.ConversionReview) {
	req := review.Request
	log := c.log.WithValues("uid", req.UID, "desiredAPIVersion", req.DesiredAPIVersion, "objects", len(req.Objects))
	objs, err := c.convert(ctx, req, &log)
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		log.Error(err, "Conversion failed")
		review.Request = nil
		review.Response = &apix.ConversionResponse{UID: req.UID, Result: metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}}
		err = writeFailed(w, review)
	} else {
		err = writeConverted(w, review, objs)
	}
	if err != nil {
		log.Error(err, "Conversion response not written")
	}
}

// convert converts each object of req to req.DesiredAPIVersion, dropping
// each one's bytes once decoded. It logs "Converting" once it knows the
// first object, adding its names to log.
func (c *converters) convert(ctx context.Context, req *apix.ConversionRequest, log *logr.Logger) (_ []runtime.Object, retErr error) {
	defer func() {
		if r := recover(); r != nil {
			conversionmetrics.WebhookPanics.WithLabelValues().Inc()
			for _, fn := range utilruntime.PanicHandlers {
				fn(ctx, r)
			}
			retErr = errors.New("internal error occurred during conversion")
		}
	}()
	if len(req.Objects) == 0 {
		log.V(1).Info("Converting")
	}
	out := make([]runtime.Object, 0, len(req.Objects))
	for i := range req.Objects {
		src, gvk, err := c.decoder.Decode(req.Objects[i].Raw)
		if err != nil {
			return nil, err
		}
		req.Objects[i].Raw = nil
		if i == 0 {
			*log = withObject(*log, src)
			log.V(1).Info("Converting")
		}
		dst, err := c.allocate(req.DesiredAPIVersion, gvk.Kind)
		if err != nil {
			return nil, err
		}
		if err := c.convertObject(ctx, src, dst); err != nil {
			return nil, err
		}
		out = append(out, dst)
	}
	return out, nil
}

// withObject adds obj's apiVersion, kind, namespace and name to log.
func withObject(log logr.Logger, obj runtime.Object) logr.Logger {
	gvk := obj.GetObjectKind().GroupVersionKind()
	kv := []any{"apiVersion", gvk.GroupVersion().String(), "kind", gvk.Kind}
	if m, err := meta.Accessor(obj); err == nil {
		kv = append(kv, "namespace", m.GetNamespace(), "name", m.GetName())
	}
	return log.WithValues(kv...)
}

// allocate returns a new object of apiVersion and kind, its type set.
func (c *converters) allocate(apiVersion, kind string) (runtime.Object, error) {
	obj, err := c.scheme.New(schema.FromAPIVersionAndKind(apiVersion, kind))
	if err != nil {
		return nil, err
	}
	t, err := meta.TypeAccessor(obj)
	if err != nil {
		return nil, err
	}
	t.SetAPIVersion(apiVersion)
	t.SetKind(kind)
	return obj, nil
}

// convertObject fills dst from src, as controller-runtime's handler does.
func (c *converters) convertObject(ctx context.Context, src, dst runtime.Object) error {
	srcGVK, dstGVK := src.GetObjectKind().GroupVersionKind(), dst.GetObjectKind().GroupVersionKind()
	if srcGVK.GroupKind() != dstGVK.GroupKind() {
		return fmt.Errorf("src %T and dst %T does not belong to same API Group", src, dst)
	}
	if srcGVK == dstGVK {
		return fmt.Errorf("conversion is not allowed between same type %T", src)
	}
	if conv, ok := c.GetConverter(srcGVK.GroupKind()); ok {
		return conv.ConvertObject(ctx, src, dst)
	}
	srcHub, srcIsHub := src.(Hub)
	dstHub, dstIsHub := dst.(Hub)
	srcSpoke, srcIsSpoke := src.(Convertible)
	dstSpoke, dstIsSpoke := dst.(Convertible)
	switch {
	case srcIsHub && dstIsSpoke:
		return dstSpoke.ConvertFrom(srcHub)
	case dstIsHub && srcIsSpoke:
		return srcSpoke.ConvertTo(dstHub)
	case srcIsSpoke && dstIsSpoke:
		return c.viaHub(srcGVK, srcSpoke, dstSpoke)
	default:
		return fmt.Errorf("%T is not convertible to %T", src, dst)
	}
}

// viaHub converts between two spokes through a new hub of their kind.
func (c *converters) viaHub(gvk schema.GroupVersionKind, src, dst Convertible) error {
	hub, err := c.hubOf(gvk.GroupKind())
	if err != nil {
		return err
	}
	if err := src.ConvertTo(hub); err != nil {
		return fmt.Errorf("%T failed to convert to hub version %T : %w", src, hub, err)
	}
	if err := dst.ConvertFrom(hub); err != nil {
		return fmt.Errorf("%T failed to convert from hub version %T : %w", dst, hub, err)
	}
	return nil
}

// hubOf returns a new object of gk's hub version.
func (c *converters) hubOf(gk schema.GroupKind) (crconversion.Hub, error) {
	var hub crconversion.Hub
	for gvk := range c.scheme.AllKnownTypes() {
		if gvk.GroupKind() != gk {
			continue
		}
		obj, err := c.scheme.New(gvk)
		if err != nil {
			return nil, fmt.Errorf("failed to allocate an instance for gvk %v: %w", gvk, err)
		}
		if h, ok := obj.(crconversion.Hub); ok {
			if hub != nil {
				return nil, fmt.Errorf("multiple hub version defined for %s", gk)
			}
			hub = h
		}
	}
	if hub == nil {
		return nil, fmt.Errorf("%s does not have any Hub defined", gk)
	}
	return hub, nil
}
