package container

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror/mirrortest"
	"github.com/opkit-dev/opkit/hack/image/ociimage"
)

// waitTimeout bounds every wait for the operator: long, because it is a
// ceiling for a stuck test on a busy machine, not a measure of speed.
const waitTimeout = 2 * time.Minute

func newClient(t *testing.T) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(s), v1alpha1.AddToScheme(s)); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config(), client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// operator is the sample operator running in a container as deployed.
type operator struct {
	d                                    deployment
	mgr                                  corev1.Container
	c                                    client.Client
	pid                                  int
	healthAddr, metricsAddr, webhookAddr string
}

// runOperator runs the image with runc as config/default's Deployment
// runs it, against the test control plane, until t ends.
func runOperator(t *testing.T) operator {
	t.Helper()
	requireRuntime(t)
	d := render(t)
	mgr := d.manager(t)
	c := newClient(t)
	d.applyIdentity(t, c)
	d.applyWebhookTargets(t, c)
	// Each test's home namespace would grant it by name
	// (docs/mirror-tenancy.md); here the operator may act as any.
	operatorUser := "system:serviceaccount:" + d.deploy.Namespace + ":" + d.deploy.Spec.Template.Spec.ServiceAccountName
	if err := mirrortest.GrantImpersonation(t.Context(), env.Client(), operatorUser); err != nil {
		t.Fatal(err)
	}

	img, err := ociimage.Build(t.Context(), ociimage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	bundle := t.TempDir()
	if err := unpack(img, filepath.Join(bundle, "rootfs")); err != nil {
		t.Fatal(err)
	}
	ns, sa := d.deploy.Namespace, d.deploy.Spec.Template.Spec.ServiceAccountName
	saDir := writeServiceAccount(t, bundle, ns, token(t, ns, sa))
	healthAddr, metricsAddr := freeAddr(t), freeAddr(t)
	args := command(mgr, cf)
	args = rebind(t, args, containerPort(t, mgr, "health"), healthAddr)
	args = rebind(t, args, containerPort(t, mgr, "https"), metricsAddr)
	args, webhookAddr := rebindWebhook(t, args)
	id := containerID()
	if err := containerSpec(t, bundle, id, d.deploy.Spec.Template.Spec, mgr, args, saDir).write(bundle); err != nil {
		t.Fatal(err)
	}
	ctr := run(t, bundle, id)
	pid := ctr.pid(t)
	t.Logf("container %s runs %q as pid %d", ctr.id, args, pid)
	return operator{d: d, mgr: mgr, c: c, pid: pid, healthAddr: healthAddr, metricsAddr: metricsAddr, webhookAddr: webhookAddr}
}

// TestContainerRunsAsDeployed runs the image with runc as
// config/default's Deployment runs it, and checks what a pod would show.
func TestContainerRunsAsDeployed(t *testing.T) {
	op := runOperator(t)
	d, mgr, c, pid := op.d, op.mgr, op.c, op.pid
	healthAddr, metricsAddr, ns := op.healthAddr, op.metricsAddr, op.d.deploy.Namespace

	t.Run("security context", func(t *testing.T) { checkSecurityContext(t, pid, mgr) })
	t.Run("probes", func(t *testing.T) {
		for _, p := range []*corev1.Probe{mgr.LivenessProbe, mgr.ReadinessProbe} {
			url := "http://" + healthAddr + p.HTTPGet.Path
			waitFor(t, pid, url+" answers 200", func(ctx context.Context) (bool, error) {
				code, _, err := get(ctx, url, "")
				return err == nil && code == http.StatusOK, nil
			})
		}
	})
	t.Run("lease in the namespace file's namespace", func(t *testing.T) { waitForLease(t, pid, c, ns) })
	t.Run("secure metrics", func(t *testing.T) { checkMetrics(t, pid, c, d, "https://"+metricsAddr+"/metrics") })
	t.Run("mirror", func(t *testing.T) { checkMirror(t, pid, c) })
	t.Run("fan-out within the memory limit", func(t *testing.T) { checkFanOut(t, pid, c, mgr) })
	t.Run("held sources within the memory limit", func(t *testing.T) { checkHeldSources(t, pid, c, mgr) })

	peak := procStatus(t, pid)["VmHWM"]
	cgPeak, file, err := cgroupPeak(pid)
	if err != nil {
		t.Errorf("read the container's cgroup peak: %v", err)
	}
	t.Logf("the operator's peak RSS in the container (VmHWM): %s; the container cgroup's peak charge (%s, with page cache): %.1f MiB", peak, file, float64(cgPeak)/(1<<20))
}

// checkSecurityContext reads from /proc what the runtime applied to the
// operator's process.
func checkSecurityContext(t *testing.T, pid int, mgr corev1.Container) {
	st := procStatus(t, pid)
	uid, gid := fmt.Sprint(*mgr.SecurityContext.RunAsUser), fmt.Sprint(*mgr.SecurityContext.RunAsGroup)
	for field, want := range map[string]string{
		"Uid":        strings.Repeat(uid+"\t", 3) + uid,
		"Gid":        strings.Repeat(gid+"\t", 3) + gid,
		"CapEff":     "0000000000000000",
		"CapPrm":     "0000000000000000",
		"CapBnd":     "0000000000000000",
		"NoNewPrivs": "1",
		"Seccomp":    "2", // a filter
	} {
		if st[field] != want {
			t.Errorf("/proc/%d/status %s: %q, want %q", pid, field, st[field], want)
		}
	}
	if limit := mgr.Resources.Limits.Memory(); !limit.IsZero() {
		got, file, err := cgroupValue(pid, "memory.limit_in_bytes", "memory.max")
		if err != nil || got != limit.Value() {
			t.Errorf("the container's memory limit (%s) is %d (%v), want the Deployment's %s", file, got, err, limit)
		}
	}
	mountinfo, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		t.Fatal(err)
	}
	var rootOpts string
	for _, line := range strings.Split(string(mountinfo), "\n") {
		if f := strings.Fields(line); len(f) > 5 && f[4] == "/" {
			rootOpts = f[5]
		}
	}
	if !strings.HasPrefix(rootOpts, "ro") {
		t.Errorf("the container's / is mounted %q, want read-only", rootOpts)
	}
	host, err1 := os.Readlink("/proc/self/ns/net")
	ctr, err2 := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err := errors.Join(err1, err2); err != nil || host != ctr {
		t.Errorf("the container's network namespace is %s, the host's %s (%v): want the host's", ctr, host, err)
	}
}

// waitFor polls cond until it holds, failing t if the operator's process
// exits first or the wait times out.
func waitFor(t *testing.T, pid int, what string, cond wait.ConditionWithContextFunc) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			return false, fmt.Errorf("the operator exited: %w", err)
		}
		return cond(ctx)
	})
	if err != nil {
		t.Fatalf("wait until %s: %v", what, err)
	}
}

// get GETs url with token as a bearer token, if not empty, trusting any
// certificate: the operator's is self-signed, as a scraper that skips
// verification sees it.
func get(ctx context.Context, url, token string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} // #nosec G402 -- self-signed on loopback
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

func waitForLease(t *testing.T, pid int, c client.Client, ns string) {
	waitFor(t, pid, "a Lease in "+ns+" is held", func(ctx context.Context) (bool, error) {
		var leases coordinationv1.LeaseList
		if err := c.List(ctx, &leases, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, l := range leases.Items {
			if l.Spec.HolderIdentity != nil && strings.HasPrefix(*l.Spec.HolderIdentity, hostname) {
				t.Logf("Lease %s/%s held by %s", ns, l.Name, *l.Spec.HolderIdentity)
				return true, nil
			}
		}
		return false, nil
	})
}

func checkMetrics(t *testing.T, pid int, c client.Client, d deployment, url string) {
	ns := env.Namespace(t)
	reader := serviceAccount(t, c, ns, "scraper", d.clusterRoleNamed(t, "metrics-reader"))
	stranger := serviceAccount(t, c, ns, "stranger", "")
	var last string
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the last /metrics answer to the authorized token:\n%.3000s", last)
		}
	})
	waitFor(t, pid, "an authorized token reads "+url, func(ctx context.Context) (bool, error) {
		code, body, err := get(ctx, url, reader)
		if ctx.Err() == nil {
			last = fmt.Sprint(code, " ", err, "\n", body)
		}
		// docs/deploy.md greps for controller_runtime_reconcile_total.
		return err == nil && code == http.StatusOK && strings.Contains(body, "\ncontroller_runtime_reconcile_total{"), nil
	})
	for _, tc := range []struct {
		who, token string
		want       int
	}{
		{"a token not bound to metrics-reader", stranger, http.StatusForbidden},
		{"no token", "", http.StatusUnauthorized},
		{"a token the API server did not sign", "not-a-token", http.StatusUnauthorized},
	} {
		code, body, err := get(t.Context(), url, tc.token)
		if err != nil || code != tc.want {
			t.Errorf("%s: GET %s: %d %v (%.200s), want %d", tc.who, url, code, err, body, tc.want)
		}
	}
}

func checkMirror(t *testing.T, pid int, c client.Client) {
	src := env.Namespace(t)
	if err := mirrortest.GrantCopier(t.Context(), env.Client(), src, v1alpha1.DefaultServiceAccountName); err != nil {
		t.Fatal(err)
	}
	label := map[string]string{"opkit.dev/container-test": src}
	var targets []string
	for range 2 {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "container-target-", Labels: map[string]string{
			"opkit.dev/container-test": src, mirror.AcceptLabel(src): "true",
		}}}
		if err := c.Create(t.Context(), n); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), n) })
		targets = append(targets, n.Name)
	}
	data := map[string]string{"ca.crt": "a certificate"}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: src, Name: "ca-bundle"}, Data: data}
	m := &v1alpha1.Mirror{
		ObjectMeta: metav1.ObjectMeta{Namespace: src, Name: "ca-bundle"},
		Spec: v1alpha1.MirrorSpec{
			Source:            v1alpha1.SourceRef{Kind: v1alpha1.KindConfigMap, Name: cm.Name},
			NamespaceSelector: metav1.LabelSelector{MatchLabels: label},
		},
	}
	for _, o := range []client.Object{cm, m} {
		if err := c.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range targets {
		waitFor(t, pid, "the copy in "+ns, func(ctx context.Context) (bool, error) {
			var cp corev1.ConfigMap
			err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: cm.Name}, &cp)
			return err == nil && cp.Data["ca.crt"] == data["ca.crt"], nil
		})
	}
	waitFor(t, pid, "the Mirror's status says Synced into 2 namespaces", func(ctx context.Context) (bool, error) {
		var got v1alpha1.Mirror
		if err := c.Get(ctx, client.ObjectKeyFromObject(m), &got); err != nil {
			return false, err
		}
		ready := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
		return ready != nil && ready.Status == metav1.ConditionTrue && ready.Reason == v1alpha1.ReasonSynced &&
			got.Status.SyncedNamespaces == 2 && got.Status.ObservedGeneration == got.Generation, nil
	})
}
