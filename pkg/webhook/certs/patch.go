package certs

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// patchTargets sets the caBundle of every target to bundle where it
// differs. Each write is a patch of the caBundle fields alone, so fields
// other writers own (rules, failurePolicy, the service) are never
// overwritten with what this replica happened to read.
func (r *Rotator) patchTargets(ctx context.Context, bundle []byte) error {
	var errs []error
	t := r.opts.Targets
	for _, name := range t.ValidatingWebhooks {
		errs = append(errs, r.patchValidating(ctx, name, bundle))
	}
	for _, name := range t.MutatingWebhooks {
		errs = append(errs, r.patchMutating(ctx, name, bundle))
	}
	for _, name := range t.CRDs {
		errs = append(errs, r.patchCRD(ctx, name, bundle))
	}
	return errors.Join(errs...)
}

func (r *Rotator) patchValidating(ctx context.Context, name string, bundle []byte) error {
	api := r.client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	c, err := api.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get ValidatingWebhookConfiguration %s for its caBundle: %w%s", name, err, hint(err))
	}
	var stale []string
	for _, w := range c.Webhooks {
		if !bytes.Equal(w.ClientConfig.CABundle, bundle) {
			stale = append(stale, w.Name)
		}
	}
	return r.patchWebhooks("ValidatingWebhookConfiguration", name, stale, bundle, func(p []byte) error {
		_, err := api.Patch(ctx, name, types.StrategicMergePatchType, p, metav1.PatchOptions{})
		return err
	})
}

func (r *Rotator) patchMutating(ctx context.Context, name string, bundle []byte) error {
	api := r.client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	c, err := api.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get MutatingWebhookConfiguration %s for its caBundle: %w%s", name, err, hint(err))
	}
	var stale []string
	for _, w := range c.Webhooks {
		if !bytes.Equal(w.ClientConfig.CABundle, bundle) {
			stale = append(stale, w.Name)
		}
	}
	return r.patchWebhooks("MutatingWebhookConfiguration", name, stale, bundle, func(p []byte) error {
		_, err := api.Patch(ctx, name, types.StrategicMergePatchType, p, metav1.PatchOptions{})
		return err
	})
}

// patchWebhooks sends the patch that sets the caBundle of the stale
// webhooks of the kind's object name, if any are.
func (r *Rotator) patchWebhooks(kind, name string, stale []string, bundle []byte, patch func([]byte) error) error {
	if len(stale) == 0 {
		return nil
	}
	if err := patch(webhooksPatch(stale, bundle)); err != nil {
		return fmt.Errorf("patch caBundle of %s %s: %w%s", kind, name, err, hint(err))
	}
	r.opts.Logger.Info("patched caBundle", "kind", kind, "name", name, "webhooks", stale)
	return nil
}

// webhooksPatch is a strategic merge patch that sets the caBundle of the
// named webhooks: the webhooks list merges by name, so the other webhooks
// and fields stay as they are.
func webhooksPatch(names []string, bundle []byte) []byte {
	type clientConfig struct {
		CABundle []byte `json:"caBundle"`
	}
	type webhook struct {
		Name         string       `json:"name"`
		ClientConfig clientConfig `json:"clientConfig"`
	}
	p := struct {
		Webhooks []webhook `json:"webhooks"`
	}{}
	for _, n := range names {
		p.Webhooks = append(p.Webhooks, webhook{Name: n, ClientConfig: clientConfig{CABundle: bundle}})
	}
	b, _ := json.Marshal(p) // cannot fail: strings and bytes only
	return b
}

func (r *Rotator) patchCRD(ctx context.Context, name string, bundle []byte) error {
	api := r.dynamic.Resource(crdResource)
	crd, err := api.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get CustomResourceDefinition %s for its conversion caBundle: %w%s", name, err, hint(err))
	}
	strategy, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy")
	if strategy != "Webhook" {
		return fmt.Errorf("patch conversion caBundle of CustomResourceDefinition %s: spec.conversion.strategy is %q, not Webhook: set it, or drop the CRD from Targets.CRDs", name, strategy)
	}
	cur, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
	want := base64.StdEncoding.EncodeToString(bundle)
	if cur == want {
		return nil
	}
	patch := map[string]any{"spec": map[string]any{"conversion": map[string]any{"webhook": map[string]any{
		"clientConfig": map[string]any{"caBundle": want}}}}}
	b, _ := json.Marshal(patch) // cannot fail: strings only
	if _, err := api.Patch(ctx, name, types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("patch conversion caBundle of CustomResourceDefinition %s: %w%s", name, err, hint(err))
	}
	r.opts.Logger.Info("patched caBundle", "kind", "CustomResourceDefinition", "name", name)
	return nil
}

// hint says what to do about the errors a user causes.
func hint(err error) string {
	switch {
	case apierrors.IsNotFound(err):
		return " (create it, or drop it from Options.Targets)"
	case apierrors.IsForbidden(err):
		return " (grant get and patch on it to the operator's service account: see the package doc, Permissions)"
	}
	return ""
}
