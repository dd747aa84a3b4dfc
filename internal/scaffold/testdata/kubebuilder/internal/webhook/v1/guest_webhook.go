// Package v1 holds the webhooks of guestbook's v1 API.
package v1

import (
	"context"
	"errors"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	guestbookv1 "example.com/guestbook/api/v1"
)

// SetupGuestWebhookWithManager registers the webhook for Guest in the manager.
func SetupGuestWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &guestbookv1.Guest{}).
		WithDefaulter(&GuestDefaulter{}).
		WithDefaulterCustomPath("/custom-default-guest").
		WithValidator(&GuestValidator{}).
		Complete()
}

// GuestDefaulter names a Guest with no name "stranger".
type GuestDefaulter struct{}

// Default sets the defaults of a Guest.
func (d *GuestDefaulter) Default(_ context.Context, g *guestbookv1.Guest) error {
	if g.Spec.Name == "" {
		g.Spec.Name = "stranger"
	}
	return nil
}

// GuestValidator refuses a Guest named "nobody".
type GuestValidator struct{}

func (v *GuestValidator) check(g *guestbookv1.Guest) (admission.Warnings, error) {
	if g.Spec.Name == "nobody" {
		return nil, errors.New("spec.name: a guest cannot be nobody")
	}
	return nil, nil
}

// ValidateCreate validates a new Guest.
func (v *GuestValidator) ValidateCreate(_ context.Context, g *guestbookv1.Guest) (admission.Warnings, error) {
	return v.check(g)
}

// ValidateUpdate validates a changed Guest.
func (v *GuestValidator) ValidateUpdate(_ context.Context, _, g *guestbookv1.Guest) (admission.Warnings, error) {
	return v.check(g)
}

// ValidateDelete allows every deletion.
func (v *GuestValidator) ValidateDelete(context.Context, *guestbookv1.Guest) (admission.Warnings, error) {
	return nil, nil
}
