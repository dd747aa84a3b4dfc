package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opkit-dev/opkit/pkg/testenv"
)

// maxMembers bounds --members: each member is an etcd and a kube-apiserver.
const maxMembers = 5

// serveFleet starts a hub, with the CRDs, and n members at once, writes
// their kubeconfigs (the hub's at hubKubeconfig, each member's beside it),
// puts each member's in a Secret of the hub's namespace, then serves until
// ctx ends and stops them all.
func serveFleet(ctx context.Context, crds []string, n int, namespace, hubKubeconfig string, out io.Writer) error {
	envs := make([]*testenv.Environment, n+1)
	errs := make([]error, n+1)
	var wg sync.WaitGroup
	for i := range envs {
		opts := testenv.Options{}
		if i == 0 {
			opts.CRDDirs = crds
		}
		wg.Go(func() { envs[i], errs[i] = testenv.Start(opts) })
	}
	wg.Wait()
	paths := []string{hubKubeconfig}
	for i := range n {
		paths = append(paths, filepath.Join(filepath.Dir(hubKubeconfig), memberName(i)+".kubeconfig"))
	}
	err := errors.Join(errs...)
	if err == nil {
		err = setUpFleet(ctx, envs, paths, namespace)
	}
	if err == nil {
		printFleet(out, envs[0], paths, namespace)
		<-ctx.Done()
	}
	fmt.Fprintln(out, "Stopping the control planes...")
	for i, e := range envs {
		if e != nil {
			err = errors.Join(err, e.Stop(), removeIfExists(paths[i]))
		}
	}
	return err
}

func memberName(i int) string { return fmt.Sprintf("member-%d", i+1) }

// setUpFleet writes each cluster's kubeconfig to its path and each
// member's into a Secret of the hub's namespace: inline credentials, as
// fleet.KubeconfigSecrets requires.
func setUpFleet(ctx context.Context, envs []*testenv.Environment, paths []string, namespace string) error {
	for i, e := range envs {
		if err := e.WriteKubeconfig(paths[i]); err != nil {
			return err
		}
	}
	hub := envs[0].Client()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := hub.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace %s on the hub: %w", namespace, err)
	}
	for i, m := range envs[1:] {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: memberName(i)}, Data: map[string][]byte{"kubeconfig": m.Kubeconfig()}}
		if _, err := hub.CoreV1().Secrets(namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create the Secret of %s on the hub: %w", s.Name, err)
		}
	}
	return nil
}

func printFleet(out io.Writer, hub *testenv.Environment, paths []string, namespace string) {
	kubectl := "kubectl"
	if p, err := testenv.Kubectl(); err == nil {
		kubectl = p
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nA hub is running at %s with %d members.\n\nTry, in another terminal:\n", hub.Config().Host, len(paths)-1)
	fmt.Fprintf(&b, "  KUBECONFIG=%s %s -n %s get secrets   # the members' kubeconfigs\n", paths[0], kubectl, namespace)
	for i, p := range paths[1:] {
		fmt.Fprintf(&b, "  KUBECONFIG=%s %s get namespaces   # %s\n", p, kubectl, memberName(i))
	}
	fmt.Fprintf(&b, "\nRun a fleet operator with --kubeconfig %s.\n\nPress Ctrl-C to stop them.\n", paths[0])
	fmt.Fprint(out, b.String())
}
