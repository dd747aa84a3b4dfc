package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/opkit-dev/opkit/pkg/testenv"
)

// maxLocalMembers bounds --members: each member is an etcd and a
// kube-apiserver of its own.
const maxLocalMembers = 5

// The sample objects --local creates.
const (
	samplePolicy    = "team-defaults"
	sampleNamespace = "apps"
)

// localFleet is a hub and its members, each a control plane of its own on
// this machine (pkg/testenv), and their kubeconfigs.
type localFleet struct {
	dir              string
	membersNamespace string
	policyNamespace  string
	hub              *testenv.Environment
	members          []*testenv.Environment // members[i] is named memberName(i)
}

func memberName(i int) string { return fmt.Sprintf("member-%d", i+1) }

// kubeconfig is the path of the kubeconfig of the hub ("hub") or a member.
func (l *localFleet) kubeconfig(cluster string) string {
	return filepath.Join(l.dir, cluster+".kubeconfig")
}

// startLocal starts a hub and n members at once, writes each one's
// kubeconfig into dir, puts each member's in a Secret of the hub's
// members namespace and creates the sample objects: the policy
// team-defaults on the hub, and a namespace apps in every member, which
// opts in on member-1 only.
func startLocal(ctx context.Context, dir string, n int, membersNamespace, policyNamespace string) (*localFleet, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	envs, err := startPlanes(n + 1)
	if err != nil {
		return nil, err
	}
	l := &localFleet{dir: abs, membersNamespace: membersNamespace, policyNamespace: policyNamespace, hub: envs[0], members: envs[1:]}
	if err := l.setUp(ctx); err != nil {
		return nil, errors.Join(err, l.stop())
	}
	return l, nil
}

// startPlanes starts n control planes in parallel: on a busy machine one
// takes a while, and they wait mostly on their own disks and processes.
func startPlanes(n int) ([]*testenv.Environment, error) {
	envs := make([]*testenv.Environment, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { envs[i], errs[i] = testenv.Start(testenv.Options{}) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, e := range envs {
			if e != nil {
				err = errors.Join(err, e.Stop())
			}
		}
		return nil, fmt.Errorf("start the hub and the members: %w", err)
	}
	return envs, nil
}

func (l *localFleet) setUp(ctx context.Context) error {
	if err := l.hub.WriteKubeconfig(l.kubeconfig("hub")); err != nil {
		return err
	}
	hub := l.hub.Client()
	for _, ns := range []string{l.membersNamespace, l.policyNamespace} {
		if err := createNamespace(ctx, hub, ns, nil); err != nil {
			return err
		}
	}
	for i, m := range l.members {
		name := memberName(i)
		if err := m.WriteKubeconfig(l.kubeconfig(name)); err != nil {
			return err
		}
		// The member's kubeconfig carries its credentials inline, as
		// fleet.KubeconfigSecrets requires.
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{"kubeconfig": m.Kubeconfig()}}
		if _, err := hub.CoreV1().Secrets(l.membersNamespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create the Secret of %s: %w", name, err)
		}
		var accept map[string]string
		if i == 0 {
			accept = map[string]string{LabelAccept: "true"}
		}
		if err := createNamespace(ctx, m.Client(), sampleNamespace, accept); err != nil {
			return fmt.Errorf("in %s: %w", name, err)
		}
	}
	policy := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: samplePolicy, Labels: map[string]string{LabelCopy: "true"}},
		Data:       map[string]string{"log-level": "info"},
	}
	if _, err := hub.CoreV1().ConfigMaps(l.policyNamespace).Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create the sample policy: %w", err)
	}
	return nil
}

func createNamespace(ctx context.Context, c kubernetes.Interface, name string, labels map[string]string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if _, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}

// stop stops every cluster and removes the kubeconfigs.
func (l *localFleet) stop() error {
	errs := []error{l.hub.Stop(), removeIfExists(l.kubeconfig("hub"))}
	for i, m := range l.members {
		errs = append(errs, m.Stop(), removeIfExists(l.kubeconfig(memberName(i))))
	}
	return errors.Join(errs...)
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// printWalkthrough prints the kubectl commands to look at each cluster and
// to try the operator out.
func (l *localFleet) printWalkthrough(out io.Writer) {
	kubectl := "kubectl"
	if p, err := testenv.Kubectl(); err == nil {
		kubectl = p
	}
	at := func(cluster, args string) string {
		return fmt.Sprintf("  KUBECONFIG=%s %s %s\n", l.kubeconfig(cluster), kubectl, args)
	}
	fmt.Fprintf(out, "\nThe fleet operator runs against a hub at %s and %d members.\n", l.hub.Config().Host, len(l.members))
	fmt.Fprintf(out, "It copies the hub's ConfigMaps labelled %s=true in namespace %s\n", LabelCopy, l.policyNamespace)
	fmt.Fprintf(out, "into every member namespace labelled %s=true.\n\nThe hub: the members' kubeconfigs and the policy\n", LabelAccept)
	fmt.Fprint(out, at("hub", "-n "+l.membersNamespace+" get secrets"))
	fmt.Fprint(out, at("hub", "-n "+l.policyNamespace+" get configmaps --show-labels"))
	fmt.Fprintf(out, "\nEach member: namespace %s opts in on member-1 only, so only member-1 holds a copy\n", sampleNamespace)
	for i := range l.members {
		fmt.Fprint(out, at(memberName(i), "get namespaces -L "+LabelAccept))
		fmt.Fprint(out, at(memberName(i), "-n "+sampleNamespace+" get configmaps -L "+LabelCopied))
	}
	fmt.Fprintf(out, "\nChange the policy: every copy follows\n")
	fmt.Fprint(out, at("hub", "-n "+l.policyNamespace+` patch configmap `+samplePolicy+` -p '{"data":{"log-level":"debug"}}'`))
	fmt.Fprint(out, at(memberName(0), "-n "+sampleNamespace+" get configmap "+samplePolicy+" -o yaml"))
	if len(l.members) > 1 {
		fmt.Fprintf(out, "\nOpt member-2's namespace in: it receives a copy\n")
		fmt.Fprint(out, at(memberName(1), "label namespace "+sampleNamespace+" "+LabelAccept+"=true"))
	}
	fmt.Fprintf(out, "\nWithdraw member-1's opt-in: its copy is deleted\n")
	fmt.Fprint(out, at(memberName(0), "label namespace "+sampleNamespace+" "+LabelAccept+"-"))
	fmt.Fprintf(out, "\nDelete the policy: every copy goes\n")
	fmt.Fprint(out, at("hub", "-n "+l.policyNamespace+" delete configmap "+samplePolicy))
	fmt.Fprintf(out, "\nPress Ctrl-C to stop the operator, the hub and the members.\n\n")
}
