package v1alpha1

import "sigs.k8s.io/controller-runtime/pkg/conversion"

var _ conversion.Hub = (*Mirror)(nil)

// Hub makes v1alpha1 the hub of the Mirror's conversions: every other
// version converts to and from it (controller-runtime's hub and spoke),
// since it is the version stored.
func (*Mirror) Hub() {}
