package scaffold

import (
	"strings"
	"testing"
)

// A controller's setup the converter cannot map whole is reported, at the
// line of what it could not map, and gets no twin; what it can map is
// generated.
func TestKubebuilderSetupsReportWhatTheyCannotMap(t *testing.T) {
	for _, tt := range []struct {
		name, setup string
		needs       []string // in the report's needs, with the file's line
		twin        bool
	}{
		{
			name: "every mapped call",
			setup: `return ctrl.NewControllerManagedBy(mgr).
		For(&appsv1.Deployment{}).
		Owns(&corev1.ConfigMap{}, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Watches(&corev1.Secret{}, &handler.EnqueueRequestForObject{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &appsv1.Deployment{}, handler.OnlyControllerOwner())).
		WithEventFilter(predicate.GenerationChangedPredicate{}).
		Complete(r)`,
			twin: true,
		},
		{
			name: "an unknown builder call",
			setup: `return ctrl.NewControllerManagedBy(mgr).
		For(&appsv1.Deployment{}).
		WithLogConstructor(nil).
		Complete(r)`,
			needs: []string{"x_controller.go:24`: XReconciler SetupWithManager WithLogConstructor: a builder call opkit does not map"},
		},
		{
			name: "a handler of its own",
			setup: `return ctrl.NewControllerManagedBy(mgr).
		For(&appsv1.Deployment{}).
		Watches(&corev1.Secret{}, myHandler{}).
		Complete(r)`,
			needs: []string{"x_controller.go:24`: XReconciler SetupWithManager Watches(*corev1.Secret, myHandler{}): a handler opkit does not map"},
		},
		{
			name: "an option opkit lacks",
			setup: `return ctrl.NewControllerManagedBy(mgr).
		For(&appsv1.Deployment{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 3, RecoverPanic: ptr.To(true)}).
		Complete(r)`,
			needs: []string{"x_controller.go:24`: XReconciler SetupWithManager WithOptions RecoverPanic: ptr.To(true): an option opkit's controller.Options names differently or lacks"},
		},
		{
			name: "more than a chain",
			setup: `if err := mgr.Add(nil); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).For(&appsv1.Deployment{}).Complete(r)`,
			needs: []string{"XReconciler SetupWithManager if err := mgr.Add(nil); err != nil {: mgr.Add: a method of controller-runtime's manager opkit's does not have"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := `package controller

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

var _ = ptr.To[bool]

type myHandler struct{ handler.EventHandler }

type XReconciler struct{ Client any }

// SetupWithManager sets up the controller with the Manager.
func (r *XReconciler) SetupWithManager(mgr ctrl.Manager) error {
	` + tt.setup + `
}

var _ = []any{builder.WithPredicates, predicate.Funcs{}, controller.Options{}, corev1.Pod{}, appsv1.Deployment{}}
`
			dir := writeProject(t, map[string]string{"internal/controller/x_controller.go": src})
			gofiles, err := loadGoFiles(dir)
			if err != nil {
				t.Fatal(err)
			}
			rep := &portReport{}
			out := files{}
			setups, err := portSetups(gofiles, &kbProject{}, "example.com/x", out, rep)
			if err != nil {
				t.Fatal(err)
			}
			report := string(rep.markdown("x"))
			for _, want := range tt.needs {
				if !strings.Contains(report[:strings.Index(report, "## Mapped")], want) {
					t.Errorf("the report's needs lack %q:\n%s", want, report)
				}
			}
			if len(rep.Needs) != len(tt.needs) {
				t.Errorf("%d items need a hand, want %d:\n%s", len(rep.Needs), len(tt.needs), report)
			}
			_, twin := setups["example.com/x/internal/controller.XReconciler"]
			gen := string(out["internal/controller/x_controller_opkit.go"])
			if twin != tt.twin || (gen != "") != tt.twin {
				t.Errorf("twin %v, generated %q; want a twin: %v", twin, gen, tt.twin)
			}
			if tt.twin {
				for _, want := range []string{
					"manager.For[*appsv1.Deployment](nil, crport.Predicate[*appsv1.Deployment](predicate.GenerationChangedPredicate{}))",
					"manager.Owns[*corev1.ConfigMap](nil, crport.Predicate[*corev1.ConfigMap](predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))",
					"manager.Watches[*corev1.Secret](nil, crport.ObjectKey[*corev1.Secret], crport.Predicate[*corev1.Secret](predicate.GenerationChangedPredicate{}))",
					"manager.Owns[*corev1.Pod](nil, crport.Predicate[*corev1.Pod](predicate.GenerationChangedPredicate{}))",
					`manager.NewController(mgr, "deployment", crport.Reconciler(r),`,
				} {
					if !strings.Contains(gen, want) {
						t.Errorf("the twin lacks %q:\n%s", want, gen)
					}
				}
			}
		})
	}
}

// A webhook of controller-runtime before 0.23 (an untyped defaulter and
// validator, NewWebhookManagedBy(mgr).For(&T{})) is rewritten in place to
// the builder the controller-runtime opkit is built with has, and its
// twin adapts the hooks to typed ones.
func TestKubebuilderUntypedWebhook(t *testing.T) {
	const src = `package v1

import (
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
)

// SetupPodWebhookWithManager registers the webhook for Pod in the manager.
func SetupPodWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr).For(&corev1.Pod{}).
		WithDefaulter(&PodDefaulter{}).
		WithValidator(&PodValidator{}).
		Complete()
}
`
	dir := writeProject(t, map[string]string{"internal/webhook/v1/pod_webhook.go": src})
	gofiles, err := loadGoFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep := &portReport{}
	out := files{}
	if _, err := portSetups(gofiles, &kbProject{}, "example.com/x", out, rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Needs) != 0 {
		t.Errorf("items need a hand:\n%s", rep.markdown("x"))
	}
	orig := string(out["internal/webhook/v1/pod_webhook.go"])
	want := "return ctrl.NewWebhookManagedBy(mgr, &corev1.Pod{}).\n\t\tWithCustomDefaulter(&PodDefaulter{}).\n\t\tWithCustomValidator(&PodValidator{}).\n\t\tComplete()"
	if !strings.Contains(orig, want) {
		t.Errorf("the setup was rewritten as\n%s\nwant\n%s", orig, want)
	}
	twin := string(out["internal/webhook/v1/pod_webhook_opkit.go"])
	want = "webhook.Hooks[*corev1.Pod]{Defaulter: crport.TypedDefaulter[*corev1.Pod](&PodDefaulter{}), Validator: crport.TypedValidator[*corev1.Pod](&PodValidator{})}"
	if !strings.Contains(twin, want) {
		t.Errorf("the twin is\n%s\nwant it to hold\n%s", twin, want)
	}
}

// A kind whose PROJECT entry has webhooks, but whose setup is not named
// kubebuilder's way, is reported: lws's SetupLeaderWorkerSetWebhook was
// not ported, and nothing said so.
func TestKubebuilderUnservedWebhooksReported(t *testing.T) {
	p := &kbProject{Resources: []kbResource{
		{Kind: "LeaderWorkerSet", Webhooks: &kbWebhooks{Line: 20, Defaulting: true, Validation: true}},
		{Kind: "Guest", Webhooks: &kbWebhooks{Line: 30, Validation: true}},
		{Kind: "Hub", Webhooks: &kbWebhooks{Line: 40, Conversion: true}},
		{Kind: "Plain"},
		{Kind: "JobSet", Path: "example.com/x/api/v1", Webhooks: &kbWebhooks{Line: 50, Defaulting: true}},
	}}
	rep := &portReport{}
	unservedWebhooks(p, portedSetups{
		"example.com/x/internal/webhook/v1.SetupGuestWebhookWithManager": "SetupGuestWebhookWithOpkit",
		// jobset's setupWebhookForJobSet: ported by its builder chain.
		kindKey("example.com/x/api/v1", "JobSet"): "setupWebhookForJobSetWithOpkit",
	}, rep)
	if len(rep.Needs) != 1 || rep.Needs[0].where() != "PROJECT:20" || !strings.Contains(rep.Needs[0].How, "no SetupLeaderWorkerSetWebhookWithManager, nor another webhook setup of LeaderWorkerSet, was ported") {
		t.Errorf("needs %+v, want LeaderWorkerSet's webhooks at PROJECT:20 only", rep.Needs)
	}
}

// A kind the reconciler reads in a helper it passes its client to, in
// another file or package of the project, is registered too (lws lists
// ControllerRevisions in pkg/utils/revision); a helper's read through a
// client that is not the reconciler's is not.
func TestKubebuilderReadsFollowTheClient(t *testing.T) {
	dir := writeProject(t, map[string]string{
		"internal/controller/x_controller.go": `package controller

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/x/pkg/revision"
)

type XReconciler struct {
	client.Client
	Reader client.Reader
}

func (r *XReconciler) Reconcile(ctx context.Context) error {
	if _, err := revision.List(ctx, r.Client, "ns"); err != nil {
		return err
	}
	_, err := revision.Audit(ctx, r.Reader)
	return err
}

func (r *XReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).For(&appsv1.Deployment{}).Complete(r)
}
`,
		"internal/controller/x_more.go": `package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

func (r *XReconciler) node(ctx context.Context, name string) (*corev1.Node, error) {
	n := &corev1.Node{}
	return n, r.Get(ctx, client.ObjectKey{Name: name}, n)
}
`,
		"pkg/revision/revision.go": `package revision

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func List(ctx context.Context, c client.Client, ns string) ([]appsv1.ControllerRevision, error) {
	return list(ctx, c, ns)
}

func list(ctx context.Context, k8s client.Client, ns string) ([]appsv1.ControllerRevision, error) {
	revisions := new(appsv1.ControllerRevisionList)
	err := k8s.List(ctx, revisions, client.InNamespace(ns))
	return revisions.Items, err
}

func Audit(ctx context.Context, c client.Reader) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	return s, c.Get(ctx, client.ObjectKey{Name: "audit"}, s)
}
`,
	})
	gofiles, err := loadGoFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep := &portReport{}
	out := files{}
	if _, err := portSetups(gofiles, &kbProject{}, "example.com/x", out, rep); err != nil {
		t.Fatal(err)
	}
	twin := string(out["internal/controller/x_controller_opkit.go"])
	for _, want := range []string{"cache.Register[*appsv1.ControllerRevision]", "cache.Register[*corev1.Node]"} {
		if !strings.Contains(twin, want) {
			t.Errorf("SetupWithOpkit lacks %s:\n%s", want, twin)
		}
	}
	if strings.Contains(twin, "corev1.Secret") {
		t.Errorf("SetupWithOpkit registers the Secret read through another client:\n%s", twin)
	}
	report := string(rep.markdown("x"))
	if !strings.Contains(report, "`pkg/revision/revision.go:17`: XReconciler reads *appsv1.ControllerRevision: registered with the cache") {
		t.Errorf("the report does not place the ControllerRevision read in the helper:\n%s", report)
	}
}

// A builder kept in a variable and extended under a condition (jobset's
// JobSet controller watches Pods when a feature gate is on) gets a twin
// with the same watches under the same condition.
func TestKubebuilderConditionalBuilder(t *testing.T) {
	src := `package controller

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"example.com/x/pkg/features"
)

type XReconciler struct{ client.Client }

func (r *XReconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		For(&appsv1.Deployment{}).
		Owns(&corev1.Service{})
	if features.Enabled(features.Pods) {
		b = b.Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
			return nil
		}))
	}
	return b.Complete(r)
}

func (r *XReconciler) pods(ctx context.Context) error {
	return r.List(ctx, &corev1.PodList{})
}
`
	dir := writeProject(t, map[string]string{"internal/controller/x_controller.go": src})
	gofiles, err := loadGoFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep := &portReport{}
	out := files{}
	if _, err := portSetups(gofiles, &kbProject{}, "example.com/x", out, rep); err != nil {
		t.Fatal(err)
	}
	gen := string(out["internal/controller/x_controller_opkit.go"])
	if len(rep.Needs) != 0 || gen == "" {
		t.Fatalf("needs %+v, twin %q; want a twin and nothing to do by hand", rep.Needs, gen)
	}
	flat := strings.Join(strings.Fields(gen), " ")
	for _, want := range []string{
		"opts := []manager.ControllerOption{ manager.For[*appsv1.Deployment](nil), manager.Owns[*corev1.Service](nil), }",
		"if features.Enabled(features.Pods) { opts = append(opts, manager.Watches[*corev1.Pod](nil, crport.MapFunc[*corev1.Pod](func(ctx context.Context, o client.Object) []ctrl.Request {",
		`manager.NewController(mgr, "deployment", crport.Reconciler(r), opts...)`,
		// Pods are watched only when the gate is on, and read always.
		"cache.Register[*corev1.Pod](mgr.Cache(), cache.TypeOptions{})",
		`"example.com/x/pkg/features"`,
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("the twin lacks %q:\n%s", want, gen)
		}
	}
}
