//go:build !nolocal

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/pkg/testenv"
)

// startLocal starts a control plane with the Mirror CRD and sample objects,
// writes its kubeconfig under dir and says how to watch the operator work.
// It returns the control plane and the kubeconfig's path, which the caller
// removes when it stops the control plane.
func startLocal(ctx context.Context, dir string, out io.Writer) (controlPlane, string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, "", err
	}
	root, err := testenv.ModuleRoot(wd)
	if err != nil {
		return nil, "", fmt.Errorf("--local runs from the opkit repository (for its CRDs and control plane): %w", err)
	}
	fmt.Fprintln(out, "Starting a local kube-apiserver and etcd...")
	env, err := testenv.Start(testenv.Options{CRDDirs: []string{filepath.Join(root, "config", "crd", "bases")}})
	if err != nil {
		return nil, "", err
	}
	kubeconfig, err := filepath.Abs(filepath.Join(dir, "kubeconfig"))
	if err == nil {
		err = env.WriteKubeconfig(kubeconfig)
	}
	if err == nil {
		err = seed(ctx, env)
	}
	if err != nil {
		return nil, "", errors.Join(err, env.Stop())
	}
	kubectl := "kubectl"
	if dir, err := testenv.BinaryDir(testenv.DefaultVersion); err == nil && fileExists(filepath.Join(dir, "kubectl")) {
		kubectl = filepath.Join(dir, "kubectl")
	}
	fmt.Fprintf(out, `
The Mirror operator runs against a local control plane at %s.
The sample Mirror platform/ca-bundle copies the ConfigMap platform/ca-bundle
into every namespace labelled team=a.

Watch it work, in another terminal:
  export KUBECONFIG=%s
  %s get mirrors -A
  %s get configmaps -A -l %s
  %s label namespace team-b team=a --overwrite     # team-b gets a copy
  %s -n platform patch configmap ca-bundle -p '{"data":{"ca.crt":"rotated"}}'   # every copy follows
  %s -n team-a-web delete configmap ca-bundle        # the copy comes back

Press Ctrl-C to stop the operator and the control plane.

`, env.Config().Host, kubeconfig, kubectl, kubectl, "samples.opkit.dev/mirror-name", kubectl, kubectl, kubectl)
	return env, kubeconfig, nil
}

// seed creates the sample namespaces, source and Mirror.
func seed(ctx context.Context, env *testenv.Environment) error {
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), v1alpha1.AddToScheme(scheme)); err != nil {
		return err
	}
	cl, err := client.New(env.Config(), client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "platform"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a-web", Labels: map[string]string{"team": "a"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a-api", Labels: map[string]string{"team": "a"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b", Labels: map[string]string{"team": "b"}}},
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "ca-bundle", Namespace: "platform"},
			Data:       map[string]string{"ca.crt": "-----BEGIN CERTIFICATE-----\n(sample)\n-----END CERTIFICATE-----\n"},
		},
		&v1alpha1.Mirror{
			ObjectMeta: metav1.ObjectMeta{Name: "ca-bundle", Namespace: "platform"},
			Spec: v1alpha1.MirrorSpec{
				Source:            v1alpha1.SourceRef{Kind: v1alpha1.KindConfigMap, Name: "ca-bundle"},
				NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
			},
		},
	}
	for _, o := range objs {
		if err := cl.Create(ctx, o); err != nil {
			return fmt.Errorf("create sample %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
