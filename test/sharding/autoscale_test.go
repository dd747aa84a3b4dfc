package sharding

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// autoscaleWait bounds each wait of the autoscaling churn: cool-downs,
// joins and takeovers on a busy machine.
const autoscaleWait = 4 * time.Minute

// deployment is the operator's Deployment as the test creates it: the
// scale subresource works without a kubelet; the fleet plays its pods.
func deployment(name string) *appsv1.Deployment {
	one := int32(1)
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "operator", Image: "sample-operator"}}},
			},
		},
	}
}

// fleet runs as many replica processes as the Deployment's spec.replicas
// asks for, as its pods would be: one scaled away gets SIGTERM, the
// newest first, and one killed is replaced.
type fleet struct {
	t      *testing.T
	g      group
	deploy string
	mu     sync.Mutex
	live   []*replica
	next   int
	seen   []int         // spec.replicas, each change
	killed map[int]int64 // pid → when SIGKILL was sent
	all    []*replica    // every process started
}

func (f *fleet) startOne() {
	r := f.g.start(f.t, fmt.Sprintf("a%d", f.next))
	f.next++
	f.live = append(f.live, r)
	f.all = append(f.all, r)
}

// follow matches the processes to spec.replicas until ctx ends.
func (f *fleet) follow(ctx context.Context) {
	deploys := env.Client().AppsV1().Deployments(f.g.namespace)
	for ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
		sc, err := deploys.GetScale(ctx, f.deploy, metav1.GetOptions{})
		if err == nil {
			f.match(int(sc.Spec.Replicas))
		}
	}
}

func (f *fleet) match(want int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.seen) == 0 || f.seen[len(f.seen)-1] != want {
		f.seen = append(f.seen, want)
		f.t.Logf("spec.replicas = %d", want)
	}
	for len(f.live) < want {
		f.startOne()
	}
	for len(f.live) > want {
		r := f.live[len(f.live)-1]
		f.live = f.live[:len(f.live)-1]
		r.Signal(f.t, syscall.SIGTERM)
		if err := r.Wait(f.t, time.Minute); err != nil {
			f.t.Errorf("%s exited with %v after SIGTERM", r.Name, err)
		}
	}
}

// kill sends SIGKILL to the oldest live replica and replaces it, as a
// Deployment would.
func (f *fleet) kill() {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.live[0]
	f.killed[r.Cmd.Process.Pid] = r.Signal(f.t, syscall.SIGKILL).UnixNano()
	f.t.Logf("SIGKILL %s", r.Name)
	f.live = f.live[1:]
	f.startOne()
}

func (f *fleet) replicas() []*replica {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.live)
}

func (f *fleet) specs() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.seen)
}

// logDecisions logs, if the test failed, what each replica's autoscaler
// logged (its decisions, each with its reason, p99, members and whether
// slots were settled) and its renewal gaps, which reset the decider. A
// defer, so that it runs before the processes' logs are removed.
func (f *fleet) logDecisions() {
	if !f.t.Failed() {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.all {
		b, err := os.ReadFile(r.Log)
		if err != nil {
			f.t.Logf("%s: %v", r.Name, err)
			continue
		}
		for line := range strings.Lines(string(b)) {
			if strings.Contains(line, `"logger":"autoscale"`) || strings.Contains(line, "Renewal gap") {
				f.t.Logf("%s: %s", r.Name, strings.TrimSpace(line))
			}
		}
	}
}

// at reports whether spec.replicas is n and n replicas share the slots.
func (f *fleet) at(n int) func() error {
	return func() error {
		s := f.specs()
		if len(s) == 0 || s[len(s)-1] != n {
			return fmt.Errorf("spec.replicas went %v, not yet %d", s, n)
		}
		return settled(f.replicas()...)
	}
}

// The autoscaler scales the sample operator's Deployment 1 → 5 under
// load, while a replica is SIGKILLed (and replaced) and another frozen
// past its lease, and back down to 2 once the load stops, the fleet
// starting a replica process for each pod spec.replicas adds and sending
// SIGTERM to one for each it removes: no Mirror is ever reconciled by two
// processes at once, and every Mirror converges. The objective is 1 µs,
// so that any load breaches it and none calms it: a key waits that long
// for an idle worker to wake. At 1 ms the workers of a machine quiet
// enough kept every wait of the load within it, and the count followed
// only the backlog of the first replica's start, if that outlasted the
// slots' rest.
func TestAutoscaleChurn(t *testing.T) {
	dir := t.TempDir()
	g := group{bin: buildOperator(t), name: "auto", kubeconfig: filepath.Join(dir, "kubeconfig"), records: filepath.Join(dir, "reconciles")}
	if err := env.WriteKubeconfig(g.kubeconfig); err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, mirrors)
	g.namespace = w.home
	ctx := t.Context()
	if _, err := env.Client().AppsV1().Deployments(w.home).Create(ctx, deployment("mirror-op"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	g.extra = []string{"--shard-autoscale-deployment", "mirror-op", "--shard-autoscale-queue-latency", "1us",
		"--shard-autoscale-max-replicas", "5", "--shard-autoscale-up-cooldown", "5s", "--shard-autoscale-down-cooldown", "8s",
		"--shard-autoscale-interval", "1s"}
	f := &fleet{t: t, g: g, deploy: "mirror-op", killed: map[int]int64{}}
	defer f.logDecisions()
	followCtx, stopFollowing := context.WithCancel(ctx)
	var following sync.WaitGroup
	following.Go(func() { f.follow(followCtx) })
	defer func() { stopFollowing(); following.Wait() }()

	eventually(t, autoscaleWait, "one replica holds the slots", f.at(1))
	stop := w.load(t)
	eventually(t, autoscaleWait, "the autoscaler scales up to 5 under load", f.at(5))

	f.kill()
	eventually(t, autoscaleWait, "the killed replica's slots move to the others and its replacement", f.at(5))
	frozen := f.replicas()[1]
	_, stoppedAt := frozen.Freeze(t)
	eventually(t, autoscaleWait, "the frozen replica's slots move", holdAll(slices.DeleteFunc(f.replicas(), func(r *replica) bool { return r == frozen })...))
	thawedAt := frozen.Signal(t, syscall.SIGCONT)
	eventually(t, autoscaleWait, "the frozen replica fences itself and rejoins", func() error {
		if !frozen.LogHas("Renewal gap beyond the renew deadline; dropping all claims and rejoining") {
			return errors.New(frozen.Name + " has not logged its renewal gap")
		}
		return f.at(5)()
	})
	stop()
	eventually(t, autoscaleWait, "the autoscaler scales down to 2 once the load stops", f.at(2))
	eventually(t, autoscaleWait, "every Mirror converges", func() error { return w.converged(ctx) })
	stopFollowing()
	following.Wait()
	t.Logf("spec.replicas went %v", f.specs())
	if s := f.specs(); slices.Max(s) != 5 || s[len(s)-1] != 2 {
		t.Errorf("spec.replicas went %v: want up to 5, then down to 2", s)
	}

	for _, r := range f.replicas() {
		r.Signal(t, syscall.SIGTERM)
		if err := r.Wait(t, time.Minute); err != nil {
			t.Errorf("%s exited with %v after SIGTERM", r.Name, err)
		}
	}
	checkNoOverlap(t, g.records, f.killed, frozen.Cmd.Process.Pid, stoppedAt.UnixNano(), thawedAt.UnixNano())
}

// checkNoOverlap checks that no key's reconciles overlap across
// processes, counting a reconcile of the frozen process in flight across
// its freeze as ended at the SIGSTOP, as checkRecords does.
func checkNoOverlap(t *testing.T, path string, ends map[int]int64, frozen int, frozeAt, thawedAt int64) {
	t.Helper()
	all, err := readIntervals(path, ends)
	if err != nil {
		t.Fatal(err)
	}
	perPid := map[int]int{}
	for i, iv := range all {
		perPid[iv.pid]++
		if iv.pid == frozen && iv.start < frozeAt && iv.end > thawedAt {
			all[i].end = frozeAt
		}
	}
	t.Logf("%d reconciles by %d processes %v", len(all), len(perPid), perPid)
	if len(perPid) < 6 {
		t.Errorf("reconciles by %d processes; want at least 6 (five replicas and the killed one's replacement)", len(perPid))
	}
	o := overlaps(all)
	for i, o := range o {
		if i == 10 {
			t.Error("...")
			break
		}
		a, b := o[0], o[1]
		t.Errorf("%s reconciled at once by pid %d [%d, %d] and pid %d [%d, %d]", a.key, a.pid, a.start, a.end, b.pid, b.start, b.end)
	}
	t.Logf("double dispatch: %d", len(o))
}
