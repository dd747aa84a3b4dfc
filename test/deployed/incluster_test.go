package deployed

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// saDir is where a pod has its ServiceAccount's files, and where
// rest.InClusterConfig reads them.
const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// inPod returns a wrap for opConfig that runs the operator in a private
// mount namespace whose saDir is a tmpfs holding the files in dir, as the
// kubelet mounts them. It skips the test where that cannot be done.
func inPod(t *testing.T, dir string) func([]string) []string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root, to mount the ServiceAccount's files at %s in a private mount namespace (unshare --mount); running as uid %d", saDir, os.Geteuid())
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skipf("needs unshare (util-linux) to run the operator in a private mount namespace: %v", err)
	}
	if out, err := exec.Command(unshare, "--mount", "true").CombinedOutput(); err != nil {
		t.Skipf("cannot make a private mount namespace here (unshare --mount: %v: %s)", err, out)
	}
	// The tmpfs goes over the directory /var/run resolves to (it is often
	// a link to /run), so that nothing is made on the host.
	run, err := filepath.EvalSymlinks("/var/run")
	if err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`set -e; mount -t tmpfs -o mode=0755 tmpfs %s; mkdir -p %s; cp "$0"/token "$0"/ca.crt "$0"/namespace %s; exec "$@"`, run, saDir, saDir)
	return func(argv []string) []string {
		return append([]string{unshare, "--mount", "--propagation", "private", "--", "sh", "-c", script, dir}, argv...)
	}
}

// TestInCluster runs the operator as a pod runs: no kubeconfig, the
// in-cluster environment variables and the ServiceAccount's files at the
// path rest.InClusterConfig reads. It finds the API server, takes its
// Lease in the namespace the namespace file names (no
// --leader-election-namespace), and does the whole workload.
func TestInCluster(t *testing.T) {
	d := render(t)
	id := d.apply(t, "incluster")
	scraper := d.scraper(t)
	lease := leaseRef{namespace: id.namespace, name: "deployed-incluster"}
	w := newWorld(t, lease, scraper)
	op := startOperator(t, podConfig(t, id, token(t, id, 3600), opConfig{lease: lease.name}))
	w.run(op, steps)
	if line, ok := op.logs.find("Starting the Mirror operator", env.Config().Host); !ok {
		t.Errorf("the operator does not say it found %s: %s", env.Config().Host, line)
	}
}

// podConfig writes the ServiceAccount's files for id with tok and returns
// c set to run the operator with them as in a pod. The test API server's
// certificate is valid for 127.0.0.1, which KUBERNETES_SERVICE_HOST names.
func podConfig(t *testing.T, id identity, tok string, c opConfig) opConfig {
	t.Helper()
	dir := t.TempDir()
	writeSAFile(t, dir, "token", tok)
	writeSAFile(t, dir, "ca.crt", string(env.Config().CAData))
	writeSAFile(t, dir, "namespace", id.namespace)
	u, err := url.Parse(env.Config().Host)
	if err != nil {
		t.Fatal(err)
	}
	c.wrap = inPod(t, dir)
	c.podNamespace = true
	c.env = append(c.env, "KUBERNETES_SERVICE_HOST="+u.Hostname(), "KUBERNETES_SERVICE_PORT="+u.Port())
	return c
}

// TestInClusterTokenRotation writes a new token into the operator's
// ServiceAccount files while it runs, as the kubelet does, and revokes the
// old one: the operator goes on with the new one. It takes about a
// minute: client-go reads a token file again only once the copy it
// cached expires (transport.NewCachedFileTokenSource: a minute), and a
// 401 does not make it read the file sooner (bearerAuthRoundTripper). The
// kubelet rotates well before a token expires, so a pod never waits; the
// test revokes the old token at once to see the new one used.
//
// Leader election is off here: a minute of 401s outlasts the Lease's renew
// deadline, and the operator would give it up and exit (ErrLeaderLost), as
// TestInCluster's operator does if its token stops working.
func TestInClusterTokenRotation(t *testing.T) {
	if testing.Short() {
		t.Skip("waits about a minute for client-go to read the token file again")
	}
	d := render(t)
	id := d.apply(t, "rotation")
	first, revoke := boundToken(t, id, "first")
	scraper := d.scraper(t)
	w := newWorld(t, leaseRef{}, scraper)
	op := startOperator(t, podConfig(t, id, first, opConfig{noLeaderElection: true}))
	w.op = op
	eventually(t, "the operator to be ready", func(w *world) error {
		code, body, err := op.ready()
		if err != nil || code != 200 {
			return fmt.Errorf("/readyz: %d %s %v", code, body, err)
		}
		return nil
	}, w)
	w.run(op, steps[1:2])

	second, _ := boundToken(t, id, "second")
	writeToken(t, op, second)
	revoke()
	// The API server caches a token's authentication for a few seconds.
	eventually(t, "the API server to refuse the revoked token", func(*world) error { return refused(first) }, w)
	w.do(steps[2])
	within(t, 2*time.Minute, "step "+steps[2].name+" with the new token", steps[2].done, w)
	metrics, err := op.scrape(scraper)
	if err != nil {
		t.Fatal(err)
	}
	// The 401s show that the old token was still in use when it was
	// revoked; the step done since, that the new one was read.
	if n, err := sample(metrics, "rest_client_requests_total", `code="401"`); err != nil || n == 0 {
		t.Errorf("no request was refused with 401 after the token was revoked (%v, %v): was it revoked?", n, err)
	}
	w.run(op, steps[3:len(steps)-1])
}

// boundToken mints a token for id bound to a Secret named after name, so
// that deleting the Secret (revoke) revokes that token alone.
func boundToken(t *testing.T, id identity, name string) (string, func()) {
	t.Helper()
	ctx := context.Background()
	secrets := env.Client().CoreV1().Secrets(id.namespace)
	s, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: id.name + "-" + name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	revoke := func() {
		if err := secrets.Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("revoke the token: %v", err)
		}
	}
	t.Cleanup(revoke)
	seconds := int64(3600)
	tr, err := env.Client().CoreV1().ServiceAccounts(id.namespace).CreateToken(ctx, id.name, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &seconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: s.Name, UID: s.UID},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("request a token for %s: %v", id.user(), err)
	}
	return tr.Status.Token, revoke
}

// writeToken replaces the token file the operator reads, through its
// mount namespace, as the kubelet does: a new file renamed over the old.
func writeToken(t *testing.T, op *operator, tok string) {
	t.Helper()
	// /var/run is often an absolute link to /run, which /proc/<pid>/root
	// would resolve in this mount namespace: resolve it first.
	run, err := filepath.EvalSymlinks("/var/run")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("/proc", fmt.Sprint(op.cmd.Process.Pid), "root", run, "secrets/kubernetes.io/serviceaccount/token")
	if err := os.WriteFile(path+".new", []byte(tok), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}

// refused returns nil once the API server answers token with 401.
func refused(token string) error {
	cfg := &rest.Config{Host: env.Config().Host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: env.Config().CAData}}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = cs.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if apierrors.IsUnauthorized(err) {
		return nil
	}
	return fmt.Errorf("the revoked token is still accepted (%v)", err)
}

func writeSAFile(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
