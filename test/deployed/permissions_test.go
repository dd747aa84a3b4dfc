package deployed

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/opkit-dev/opkit/cmd/sample-operator/api/v1alpha1"
)

// TestDeployedPermissionsSuffice runs the operator with nothing but a
// token of the ServiceAccount config/default deploys, bound to the roles it
// renders: the whole workload converges and the API server refuses the
// operator nothing.
func TestDeployedPermissionsSuffice(t *testing.T) {
	d := render(t)
	id := d.apply(t, "")
	if want := "system:serviceaccount:mirror-system:mirror-controller-manager"; id.user() != want {
		t.Fatalf("config/default deploys %s, want %s", id.user(), want)
	}
	scraper := d.scraper(t)
	lease := leaseRef{namespace: id.namespace, name: "deployed-permissions"}
	w := newWorld(t, lease, scraper)
	op := startOperator(t, opConfig{kubeconfig: writeKubeconfig(t, token(t, id, 3600)), lease: lease.name, leaseNS: lease.namespace})
	w.run(op, steps[:len(steps)-1])
	metrics, err := op.scrape(scraper)
	if err != nil {
		t.Fatal(err)
	}
	total, err := sample(metrics, "rest_client_requests_total")
	if err != nil {
		t.Fatal(err)
	}
	forbidden, err := sample(metrics, "rest_client_requests_total", `code="403"`)
	if err != nil {
		t.Fatal(err)
	}
	// Without requests counted, zero 403s would prove nothing.
	if total == 0 {
		t.Fatalf("rest_client_requests_total counts no request:\n%s", metrics)
	}
	if forbidden != 0 {
		t.Errorf("the API server refused the operator %v of %v requests (403); see its log", forbidden, total)
	}
	t.Logf("%v requests, %v refused", total, forbidden)
	w.run(op, steps[len(steps)-1:])
}

// need says what breaks without a permission: the first step of the
// workload that cannot be done, and whether /readyz then fails naming it.
// A permission with no step breaks nothing in the workload; why it is
// granted all the same is said in unused.
type need struct {
	step  string
	ready bool // /readyz fails naming the verb and resource
	// status: the Mirror's Ready condition (reason SyncFailed) and a
	// Warning Event name the verb and resource.
	status bool
	metric string // a metric of the operator's that counts the failure
	// scrape: /metrics answers a reader 500, saying it cannot check the
	// reader's token.
	scrape bool
	unused string // why it is granted though the workload does not need it
	// exits: the operator stops at start with an error naming it (the
	// self-managed webhook certificates' first sync).
	exits bool
}

// needs is, for each permission in config/rbac, what the operator needs it
// for. The test checks each entry, and that every rendered permission has
// one, so that docs/rbac.md stays true.
var needs = map[string]need{
	"list configmaps":                         {unused: listFallback},
	"watch configmaps":                        {step: "start", ready: true},
	"delete configmaps":                       {step: "unmatch", status: true},
	"list secrets":                            {unused: listFallback},
	"watch secrets":                           {step: "start", ready: true},
	"delete secrets":                          {step: "unmatch", status: true},
	"list validatingadmissionpolicies":        {unused: listFallback},
	"watch validatingadmissionpolicies":       {step: "start", ready: true},
	"list validatingadmissionpolicybindings":  {unused: listFallback},
	"watch validatingadmissionpolicybindings": {step: "start", ready: true},
	"list namespaces":                         {unused: listFallback},
	"watch namespaces":                        {step: "start", ready: true},
	"create tokenreviews":                     {step: "start", scrape: true},
	"create subjectaccessreviews":             {step: "start", scrape: true},
	"create events":                           {step: "collision", metric: "opkit_events_refused_total"},
	"patch events":                            {unused: "client-go's event broadcaster patches an Event series when an identical Event repeats"},
	"list mirrors":                            {unused: listFallback},
	"watch mirrors":                           {step: "start", ready: true},
	"patch mirrors":                           {step: "create"},
	"patch mirrors/status":                    {step: "create"},
	"get leases":                              {step: "start"},
	"create leases":                           {step: "start"},
	"update leases":                           {step: "start"},
	// The self-managed webhook certificates (config/rbac/webhook_certs_role.yaml).
	"create secrets (mirror-system)":        {unused: "the webhook CA Secret is created once, by the first operator that starts; every later start, and every other replica, reads it (pkg/webhook/certs tests the create)"},
	"get secrets (mirror-system)":           {step: "start", exits: true},
	"update secrets":                        {unused: "the webhook CA Secret is updated only when the CA is replaced, two thirds into its ten years (pkg/webhook/certs tests it in fake time)"},
	"get validatingwebhookconfigurations":   {step: "start", exits: true},
	"patch validatingwebhookconfigurations": {step: "start", exits: true},
	"get customresourcedefinitions":         {step: "start", exits: true},
	"patch customresourcedefinitions":       {step: "start", exits: true},
}

// needOf is what p is needed for: the entry for its verb and resource in
// its namespace, "verb resource (namespace)", where one permission is
// granted in two scopes for two reasons; else the verb and resource's.
func needOf(p permission) need {
	if n, ok := needs[scopedKey(p)]; ok {
		return n
	}
	return needs[key(p)]
}

func scopedKey(p permission) string { return key(p) + " (" + p.namespace + ")" }

// hasNeed reports whether needs says anything of p.
func hasNeed(p permission) bool {
	_, scoped := needs[scopedKey(p)]
	_, plain := needs[key(p)]
	return scoped || plain
}

// listFallback is why list is granted on what the cache reads.
const listFallback = "the cache lists with a streaming list, which needs watch only (client-go's WatchListClient); list is its fallback where an API server does not serve streaming lists"

func key(p permission) string { return p.verb + " " + p.resource }

// TestEachRuleIsNeededAndReported removes each permission config/rbac
// grants, one at a time, and runs the workload up to the step that needs
// it: every earlier step still works, and then the operator says which
// permission it lacks, in a log line that names the verb, the resource and
// the namespace (the API server's message), and on /readyz where the
// cache cannot list or watch. The permissions the workload does not need
// are removed all at once, and the whole workload converges without a
// single 403. It generates docs/rbac.md.
func TestEachRuleIsNeededAndReported(t *testing.T) {
	d := render(t)
	perms := d.permissions()
	var unused []permission
	for _, p := range perms {
		if !hasNeed(p) {
			t.Errorf("config/rbac grants %s, which needs says nothing of: add it, with what breaks without it", p)
		}
		if needOf(p).step == "" {
			unused = append(unused, p)
		}
	}
	for k := range needs {
		if !slices.ContainsFunc(perms, func(p permission) bool { return key(p) == k || scopedKey(p) == k }) {
			t.Errorf("needs holds %q, which config/rbac no longer grants: remove it", k)
		}
	}
	scraper := d.scraper(t)
	for i, p := range perms {
		n := needOf(p)
		if n.step == "" {
			continue
		}
		t.Run(strings.ReplaceAll(key(p), "/", "_"), func(t *testing.T) {
			lacking(t, d, fmt.Sprint(i), scraper, p, n)
		})
	}
	t.Run("unused", func(t *testing.T) {
		id := d.apply(t, "unused", unused...)
		lease := leaseRef{namespace: id.namespace, name: "deployed-unused"}
		w := newWorld(t, lease, scraper)
		op := startOperator(t, opConfig{kubeconfig: writeKubeconfig(t, token(t, id, 3600)), lease: lease.name, leaseNS: lease.namespace})
		w.run(op, steps[:len(steps)-1])
		metrics, err := op.scrape(scraper)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := sample(metrics, "rest_client_requests_total", `code="403"`); err != nil || n != 0 {
			t.Errorf("without %v, the API server refused the operator %v requests (%v)", unused, n, err)
		}
		w.run(op, steps[len(steps)-1:])
	})
	if !t.Failed() {
		checkDoc(t, perms)
	}
}

// lacking runs the workload as an identity without p, up to n.step.
func lacking(t *testing.T, d *deployment, suffix, scraper string, p permission, n need) {
	id := d.apply(t, suffix, p)
	if p.verb == "patch" && p.names != "" {
		// The caBundles hold the CA already if an earlier operator put it
		// there, and an operator patches only what differs.
		clearCABundles(t)
	}
	lease := leaseRef{namespace: id.namespace, name: "deployed-lacking-" + suffix}
	w := newWorld(t, lease, scraper)
	// Without a permission, the operator may exit (a Lease it cannot
	// renew): how is not checked here.
	op := startOperator(t, opConfig{kubeconfig: writeKubeconfig(t, token(t, id, 3600)), lease: lease.name, leaseNS: lease.namespace, anyExit: true})
	at := slices.IndexFunc(steps, func(s step) bool { return s.name == n.step })
	if at < 0 {
		t.Fatalf("needs names step %q, which the workload has not", n.step)
	}
	report := []string{"forbidden", fmt.Sprintf("cannot %s resource %q", p.verb, p.resource), id.user()}
	w.op = op
	for _, s := range steps[:at] {
		w.do(s)
		eventually(t, "step "+s.name+" (before the one that needs "+p.String()+")", func(w *world) error {
			if line, ok := op.logs.find(report...); ok {
				return fmt.Errorf("stop: the operator reports the missing permission already: %s", line)
			}
			return s.done(w)
		}, w)
	}
	w.do(steps[at])
	// Checking whether the step is done is part of it (the start step's
	// scrape of /metrics), so it goes on until the report comes. The step
	// may seem done for a moment first: a Lease is renewed after it is
	// taken.
	eventually(t, "a log line that says the operator may not "+p.verb+" "+p.resource, func(w *world) error {
		if _, ok := op.logs.find(report...); ok {
			return nil
		}
		return fmt.Errorf("no log line holds all of %q (step %s: %v)", report, n.step, steps[at].done(w))
	}, w)
	line, _ := op.logs.find(report...)
	if n.exits {
		eventually(t, "the operator to exit", func(*world) error {
			if op.running() {
				return errors.New("it still runs")
			}
			return nil
		}, w)
	}
	// What TestDeployedPermissionsSuffice counts sees the refusal (the
	// reviews guard /metrics itself, which cannot then be read).
	if !op.running() {
		// Without update on its Lease, it gives the Lease up after the
		// renew deadline and exits, as a leader must.
		t.Logf("the operator has exited (%v): its metrics and probes are not checked", op.err)
		return
	}
	if p.resource != "tokenreviews" && p.resource != "subjectaccessreviews" {
		metrics, err := op.scrape(scraper)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := sample(metrics, "rest_client_requests_total", `code="403"`); err != nil || n == 0 {
			t.Errorf("rest_client_requests_total counts no 403 (%v, %v), though the log says: %s", n, err, line)
		}
	}
	if ns := p.namespace; ns != "" && !strings.Contains(line, ns) {
		t.Errorf("the log line does not name the namespace %s: %s", ns, line)
	}
	if n.status {
		kind := v1alpha1.KindConfigMap
		if p.resource == "secrets" {
			kind = v1alpha1.KindSecret
		}
		eventually(t, "the Mirror's status and a Warning Event to say it may not "+p.verb+" "+p.resource, func(w *world) error {
			return w.failed(kind, report[1])
		}, w)
	}
	if n.metric != "" {
		metrics, err := op.scrape(scraper)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := sample(metrics, n.metric); err != nil || v == 0 {
			t.Errorf("%s is %v (%v), want it above 0", n.metric, v, err)
		}
	}
	if _, err := op.scrape(scraper); n.scrape && (err == nil || !strings.Contains(err.Error(), "500 Internal Server Error")) {
		t.Errorf("/metrics answers %v, want a 500", err)
	}
	if n.ready {
		eventually(t, "/readyz to fail naming "+p.verb+" "+p.resource, func(*world) error {
			code, body, err := op.ready()
			if err != nil || code == 200 || !strings.Contains(body, p.resource) || !strings.Contains(body, p.verb) {
				return fmt.Errorf("/readyz: %d %s %v", code, body, err)
			}
			return nil
		}, w)
	} else if code, body, err := op.ready(); err != nil || code != 200 {
		t.Errorf("/readyz fails, which needs does not say: %d %s %v", code, body, err)
	}
}

// handWritten starts the part of docs/rbac.md that is written by hand:
// checkDoc compares, and rewrites, only what precedes it.
const handWritten = "<!-- Written by hand below: TestEachRuleIsNeededAndReported keeps it. -->"

// checkDoc compares the generated part of docs/rbac.md with what needs
// says, or writes it, keeping the part written by hand.
func checkDoc(t *testing.T, perms []permission) {
	path := root + "/docs/rbac.md"
	want := rbacDoc(perms)
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	generated, tail, found := strings.Cut(string(got), handWritten)
	if !found {
		t.Fatalf("docs/rbac.md lacks the line %q that ends its generated part", handWritten)
	}
	if os.Getenv("OPKIT_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(path, []byte(want+"\n"+handWritten+tail), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if strings.TrimSuffix(generated, "\n") != want {
		t.Errorf("docs/rbac.md is not what this test generates; run OPKIT_UPDATE_DOCS=1 go test ./test/deployed/ -run %s and commit it", t.Name())
	}
}

func rbacDoc(perms []permission) string {
	var b strings.Builder
	b.WriteString(`# What each RBAC rule is for

<!-- Generated by TestEachRuleIsNeededAndReported (test/deployed): it fails when
this file differs from what it generates. Rewrite it with
OPKIT_UPDATE_DOCS=1 go test ./test/deployed/ -run TestEachRuleIsNeededAndReported -->

config/rbac grants the Mirror operator's ServiceAccount the permissions below
(its ClusterRole, for leader election its Role in mirror-system, and for its
self-managed webhook certificates the Role and ClusterRole mirror-webhook-certs,
restricted to the objects named; config/cert-manager removes those two).
test/deployed applies them as 'kubectl kustomize config/default' renders them,
runs the real operator binary with a token of that ServiceAccount, and drives
the whole Mirror workload to convergence with no request refused (403). Then
it removes each permission in turn and runs the workload again: the steps
before the one named below still work, and at that step the operator reports
the missing permission. The log line is the API server's message, which names
the verb, the resource, the namespace and the ServiceAccount; /readyz fails as
well where the cache cannot list or watch a type.

A row that says "nothing in the workload" is a permission the test removed,
together with every other such row, while the whole workload still converged
with no request refused. config/rbac grants it all the same, for the reason
the row gives; every other verb the operator never used is left out.

The workload's steps:

| step | what the operator must do |
|---|---|
`)
	for _, s := range steps {
		fmt.Fprintf(&b, "| %s | %s |\n", s.name, s.behaviour)
	}
	b.WriteString(`
| verb | resource | API group | scope | without it | reported by |
|---|---|---|---|---|---|
`)
	for _, p := range perms {
		n := needOf(p)
		group, scope := p.group, "cluster"
		if group == "" {
			group = "core"
		}
		if p.namespace != "" {
			scope = "namespace " + p.namespace
		}
		if p.names != "" {
			scope += ", only " + p.names
		}
		breaks, report := "step **"+n.step+"** fails", reportedBy(n)
		if n.step == "" {
			breaks = "nothing in the workload: " + n.unused
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", p.verb, p.resource, group, scope, breaks, report)
	}
	return b.String()
}

// reportedBy says where the operator reports a missing permission.
func reportedBy(n need) string {
	if n.step == "" {
		return "—"
	}
	out := []string{"log"}
	if n.ready {
		out = append(out, "/readyz")
	}
	if n.status {
		out = append(out, "Mirror status (SyncFailed) and Warning Event")
	}
	if n.metric != "" {
		out = append(out, "metric "+n.metric)
	}
	if n.scrape {
		out = append(out, "/metrics answers 500")
	}
	if n.exits {
		out = append(out, "the operator exits at start, before it serves anything")
	}
	return strings.Join(out, ", ")
}
