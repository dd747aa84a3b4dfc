package webhook_test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/opkit-dev/opkit/internal/cacheaccess"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/webhook"
)

// zones is a defaulter ported from controller-runtime the way jobset's pod
// webhook was: it copies the zone label of the Node named in data.node
// into data.zone, reading the Node through the manager's cached client,
// and on an error from that read it logs and admits the object unchanged,
// leaving a refusal to some validator (jobset's setNodeSelector does the
// same). With the Node registration left out of the port, every read
// fails, and nothing in an admission test sees it.
type zones struct{ c crclient.Client }

func (z zones) Default(ctx context.Context, cm *corev1.ConfigMap) error {
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data["defaulted"] = "true"
	var node corev1.Node
	if err := z.c.Get(ctx, crclient.ObjectKey{Name: cm.Data["node"]}, &node); err != nil {
		log.FromContext(ctx).Error(err, "read the node; admitting unchanged", "node", cm.Data["node"])
		return nil
	}
	cm.Data["zone"] = node.Labels["topology.kubernetes.io/zone"]
	return nil
}

// childEnv makes TestPortedSuiteSwallowsAnUnregisteredRead run: it is the
// test run that TestUnregisteredReadFailsTheSuite runs in a process of its
// own, as make test would run a ported suite.
const childEnv = "OPKIT_WEBHOOK_TEST_PORTED_SUITE"

// The ported suite of a webhook that swallows the error of a read of a kind
// nobody registered: it checks admission only, which the swallowed error
// does not change, so it passes unless opkit reports the read itself.
func TestPortedSuiteSwallowsAnUnregisteredRead(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("run by TestUnregisteredReadFailsTheSuite")
	}
	ns := selectedNamespace(t)
	crt, key := selfSigned(t)
	wo := manager.WebhookOptions{Port: freePort(t), CertDir: certDir(t, crt, key)}
	m := newManager(t, ns, wo) // no cache.Register[*corev1.Node]: the missing registration
	hooks := webhook.Hooks[*corev1.ConfigMap]{Defaulter: zones{c: m.CachedClient()}, Validator: colors{}}
	if err := webhook.Register(m, hooks); err != nil {
		t.Fatal(err)
	}
	start(t, m)
	poll(t, "/readyz to pass", func() bool {
		code, _ := get(t, "http://"+m.HealthProbeAddr()+"/readyz")
		return code == 200
	})
	url := "https://127.0.0.1:" + strconv.Itoa(wo.Port)
	installWebhooks(t, ns, url, crt, webhook.MutatePath(configMapKind), webhook.ValidatePath(configMapKind))
	cms := env.Client().CoreV1().ConfigMaps(ns)
	poll(t, "the API server to call the defaulter", func() bool {
		cm, err := cms.Create(t.Context(), configMap(ns, "probe", map[string]string{"node": "n1"}), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && cm.Data["defaulted"] == "true"
	})
	if _, err := cms.Create(t.Context(), configMap(ns, "placed", map[string]string{"node": "n1"}), metav1.CreateOptions{}); err != nil {
		t.Errorf("create a ConfigMap naming a node: %v, want it admitted", err)
	}
}

// A suite that passes while the webhook it tests reads a kind nobody
// registered, and swallows the error, would let the missing registration
// reach production. Run as make test runs it (testenv.Main, no variable
// set by the test itself), the suite must fail and name the kind and the
// registration to add.
func TestUnregisteredReadFailsTheSuite(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("this is the child")
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestPortedSuiteSwallowsAnUnregisteredRead$", "-test.count=1", "-test.v")
	// The child dies of the report, running no cleanup: what it makes in
	// its temp directory goes with this test's.
	cmd.Env = append(withoutUnregisteredReadsEnv(os.Environ()), childEnv+"=1", "TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the ported suite passed, though its webhook read Nodes, which nobody registered; output:\n%s", out)
	}
	// The webhook's own log line names the kind too: the report is what
	// must say it.
	report := "read of a kind nobody registered: cache: read /v1, Kind=Node (typed form)"
	if !strings.Contains(string(out), report) || !strings.Contains(string(out), "cache.Register[*v1.Node]") {
		t.Errorf("the ported suite failed (%v) without a report of the read saying %q and cache.Register[*v1.Node]; output:\n%s", err, report, out)
	}
}

// withoutUnregisteredReadsEnv drops the variable that says what a read of
// an unregistered kind does in tests, so that the child tests testenv.Main's
// default.
func withoutUnregisteredReadsEnv(environ []string) []string {
	var kept []string
	for _, kv := range environ {
		if !strings.HasPrefix(kv, cacheaccess.UnregisteredReadsEnv+"=") {
			kept = append(kept, kv)
		}
	}
	return kept
}
