//go:build !nolocal

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

// startLocal starts a control plane with the Mirror CRD and sample objects,
// writes its kubeconfig under dir and says how to watch the operator work.
// It installs the operator's webhooks and the Mirror's conversion pointed
// at 127.0.0.1:webhookPort (0: a free port) with a certificate of its own,
// and makes the API server present a client certificate to them,
// unless webhookPort is localNoWebhooks. It returns the control plane, with
// the webhook flags that serve what it installed, and the kubeconfig's
// path, which the caller removes when it stops the control plane. The
// sample Mirror is left to seedMirror: its create waits for the webhooks.
func startLocal(ctx context.Context, dir string, webhookPort int, out io.Writer) (localPlane, string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return localPlane{}, "", err
	}
	root, err := testenv.ModuleRoot(wd)
	if err != nil {
		return localPlane{}, "", fmt.Errorf("--local runs from the opkit repository (for its CRDs and control plane): %w", err)
	}
	opts := testenv.Options{CRDDirs: []string{filepath.Join(root, "config", "crd", "bases")}}
	if webhookPort != localNoWebhooks {
		opts.Webhook = testenv.WebhookOptions{
			Paths:       []string{filepath.Join(root, "config", "webhook", "manifests.yaml")},
			ConvertCRDs: []string{defaultConversionCRD},
			Port:        webhookPort,
			ClientAuth:  true, // only the API server may call the admission webhooks
		}
	}
	fmt.Fprintln(out, "Starting a local kube-apiserver and etcd...")
	env, err := testenv.Start(opts)
	if err != nil {
		return localPlane{}, "", err
	}
	kubeconfig, err := filepath.Abs(filepath.Join(dir, "kubeconfig"))
	if err == nil {
		err = env.WriteKubeconfig(kubeconfig)
	}
	if err == nil {
		err = seed(ctx, env, root)
	}
	if err != nil {
		return localPlane{}, "", errors.Join(err, env.Stop())
	}
	lp := localPlane{controlPlane: env}
	if s := env.Webhook(); s.Port != 0 {
		lp.webhook = webhookFlags{port: s.Port, host: s.Host, certDir: s.CertDir, certs: certsMounted, clientCA: s.ClientCAFile}
	}
	kubectl := "kubectl"
	if p, err := testenv.Kubectl(); err == nil {
		kubectl = p
	}
	fmt.Fprintf(out, `
The Mirror operator runs against a local control plane at %s.
The sample Mirror platform/ca-bundle copies the ConfigMap platform/ca-bundle
into every namespace labelled team=a that accepts copies from platform
(labelled accept.mirrors.samples.opkit.dev/platform=true). It reads and
writes as the Mirror's ServiceAccount, platform/mirror, which
config/samples/tenancy.yaml lets read the source and write ConfigMaps in
team-a-web, team-a-api and team-b.

Watch it work, in another terminal:
  export KUBECONFIG=%s
  %s get mirrors -A
  %s get configmaps -A -l %s
  %s label namespace team-b team=a --overwrite     # team-b gets a copy
  %s -n platform patch configmap ca-bundle -p '{"data":{"ca.crt":"rotated"}}'   # every copy follows
  %s -n team-a-web delete configmap ca-bundle        # the copy comes back
  %s -n platform get mirror ca-bundle -o yaml                         # v1beta1, converted by the webhook
  %s -n platform get mirrors.v1alpha1.samples.opkit.dev ca-bundle -o yaml  # v1alpha1, as stored

Press Ctrl-C to stop the operator and the control plane.

`, env.Config().Host, kubeconfig, kubectl, kubectl, "samples.opkit.dev/mirror-name", kubectl, kubectl, kubectl, kubectl, kubectl)
	return lp, kubeconfig, nil
}

// seed creates config/samples' namespaces and what their owners grant
// (the Mirror's ServiceAccount, which may read the source and write copies
// into team-a-web, team-a-api and team-b), then the source.
func seed(ctx context.Context, env *testenv.Environment, root string) error {
	if _, err := env.ApplyRBAC(ctx, filepath.Join(root, "config", "samples")); err != nil {
		return fmt.Errorf("create config/samples' namespaces and grants: %w", err)
	}
	cl, err := client.New(env.Config(), client.Options{})
	if err != nil {
		return err
	}
	src := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "ca-bundle", Namespace: "platform"},
		Data:       map[string]string{"ca.crt": "-----BEGIN CERTIFICATE-----\n(sample)\n-----END CERTIFICATE-----\n"},
	}
	if err := cl.Create(ctx, src); err != nil {
		return fmt.Errorf("create sample ConfigMap %s: %w", src.Name, err)
	}
	return nil
}

// sampleMirror is the sample Mirror --local creates.
var sampleMirror = &v1alpha1.Mirror{
	ObjectMeta: metav1.ObjectMeta{Name: "ca-bundle", Namespace: "platform"},
	Spec: v1alpha1.MirrorSpec{
		Source:            v1alpha1.SourceRef{Kind: v1alpha1.KindConfigMap, Name: "ca-bundle"},
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
	},
}

// seedMirror creates the sample Mirror once the API server takes it: its
// webhooks refuse every Mirror until the operator serves them.
func seedMirror(ctx context.Context, cfg *rest.Config, log logr.Logger) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		log.Error(err, "Cannot create the sample Mirror")
		return
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		log.Error(err, "Cannot create the sample Mirror")
		return
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := cl.Create(ctx, sampleMirror.DeepCopy())
		if err != nil && !apierrors.IsAlreadyExists(err) {
			log.V(1).Info("The sample Mirror is not taken yet", "error", err.Error())
			return false, nil
		}
		return true, nil
	})
	if err != nil && ctx.Err() == nil {
		log.Error(err, "Cannot create the sample Mirror: its webhooks did not answer within a minute")
	}
}
