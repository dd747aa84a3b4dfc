package deployed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/opkit-dev/opkit/pkg/testenv"
)

// deployment is what 'kubectl kustomize config/default' renders for the
// operator's identity: its namespace, ServiceAccount, roles and bindings.
// The Deployment and Services are left out: the test runs the binary
// itself. TestMain installed the CRD; installWebhookTargets gives it the
// rendered conversion webhook.
type deployment struct {
	namespace           *corev1.Namespace
	serviceAccount      *corev1.ServiceAccount
	clusterRoles        []*rbacv1.ClusterRole
	roles               []*rbacv1.Role
	clusterRoleBindings []*rbacv1.ClusterRoleBinding
	roleBindings        []*rbacv1.RoleBinding
	// webhookTargets are the objects whose caBundle the operator's
	// self-managed certificates keep: the webhook configurations and the
	// CRD, as rendered.
	webhookTargets []*unstructured.Unstructured
	// policies are config/policy's ValidatingAdmissionPolicy and its
	// binding, which bind the rendered ServiceAccount's user name only.
	policies []*unstructured.Unstructured
}

// metricsReader is the ClusterRole config/rbac grants scrapers, bound to
// nothing there.
const metricsReader = "mirror-metrics-reader"

var (
	renderOnce sync.Once
	rendered   *deployment
	renderErr  error
)

// render runs kubectl kustomize config/default once for the package.
func render(t testing.TB) *deployment {
	t.Helper()
	renderOnce.Do(func() { rendered, renderErr = renderDefault() })
	if renderErr != nil {
		t.Fatal(renderErr)
	}
	return rendered
}

func renderDefault() (*deployment, error) {
	kubectl, err := testenv.Kubectl()
	if err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(kubectl, "kustomize", filepath.Join(root, "config", "default"))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("render config/default with %s kustomize (make envtest builds it): %w\n%s", kubectl, err, stderr.String())
	}
	d := &deployment{}
	dec := utilyaml.NewYAMLOrJSONDecoder(&stdout, 4096)
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("decode config/default: %w", err)
		}
		if err := d.add(u); err != nil {
			return nil, fmt.Errorf("decode config/default: %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	if d.namespace == nil || d.serviceAccount == nil || len(d.clusterRoles) == 0 {
		return nil, errors.New("config/default renders no Namespace, ServiceAccount or ClusterRole")
	}
	return d, nil
}

// add keeps u if it is part of the operator's identity.
func (d *deployment) add(u *unstructured.Unstructured) error {
	var obj runtime.Object
	switch u.GetKind() {
	case "Namespace":
		d.namespace = &corev1.Namespace{}
		obj = d.namespace
	case "ServiceAccount":
		d.serviceAccount = &corev1.ServiceAccount{}
		obj = d.serviceAccount
	case "ClusterRole":
		d.clusterRoles = append(d.clusterRoles, &rbacv1.ClusterRole{})
		obj = d.clusterRoles[len(d.clusterRoles)-1]
	case "Role":
		d.roles = append(d.roles, &rbacv1.Role{})
		obj = d.roles[len(d.roles)-1]
	case "ClusterRoleBinding":
		d.clusterRoleBindings = append(d.clusterRoleBindings, &rbacv1.ClusterRoleBinding{})
		obj = d.clusterRoleBindings[len(d.clusterRoleBindings)-1]
	case "RoleBinding":
		d.roleBindings = append(d.roleBindings, &rbacv1.RoleBinding{})
		obj = d.roleBindings[len(d.roleBindings)-1]
	case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "CustomResourceDefinition":
		d.webhookTargets = append(d.webhookTargets, u)
		return nil
	case "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
		u.SetNamespace("") // cluster-scoped, whatever kustomize says
		d.policies = append(d.policies, u)
		return nil
	default:
		return nil
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, obj, true)
}

// permission is one verb on one resource, granted cluster-wide (namespace
// "") or in one namespace, on every object of it or only on those that
// names lists (resourceNames, comma-separated).
type permission struct {
	group, resource, verb, namespace, names string
}

func (p permission) String() string {
	scope := "cluster-wide"
	if p.namespace != "" {
		scope = "in " + p.namespace
	}
	g := p.group
	if g == "" {
		g = "core"
	}
	if p.names != "" {
		scope = "named " + p.names + " " + scope
	}
	return fmt.Sprintf("%s %s (%s) %s", p.verb, p.resource, g, scope)
}

// permissions lists every permission the operator's roles grant, in the
// order of the rendered rules.
func (d *deployment) permissions() []permission {
	var out []permission
	for _, r := range d.operatorClusterRoles() {
		out = append(out, flatten(r.Rules, "")...)
	}
	for _, r := range d.roles {
		out = append(out, flatten(r.Rules, r.Namespace)...)
	}
	return out
}

func (d *deployment) operatorClusterRoles() []*rbacv1.ClusterRole {
	return slices.DeleteFunc(slices.Clone(d.clusterRoles), func(r *rbacv1.ClusterRole) bool { return r.Name == metricsReader })
}

func flatten(rules []rbacv1.PolicyRule, ns string) []permission {
	var out []permission
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out = append(out, permission{g, res, v, ns, strings.Join(r.ResourceNames, ",")})
				}
			}
		}
	}
	return out
}

// without returns rules less every permission in drop that is in ns.
func without(rules []rbacv1.PolicyRule, ns string, drop []permission) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, p := range flatten(rules, ns) {
		if slices.Contains(drop, p) {
			continue
		}
		var names []string
		if p.names != "" {
			names = strings.Split(p.names, ",")
		}
		out = append(out, rbacv1.PolicyRule{APIGroups: []string{p.group}, Resources: []string{p.resource}, ResourceNames: names, Verbs: []string{p.verb}})
	}
	return out
}

// identity is a ServiceAccount bound to the operator's roles.
type identity struct {
	namespace, name string
}

// user is the identity's user name in the API server's messages.
func (id identity) user() string {
	return "system:serviceaccount:" + id.namespace + ":" + id.name
}

// apply creates the rendered identity with its roles less drop. With no
// drop and suffix "", it is the deployment as rendered; otherwise every
// name gets the suffix, so that identities of different tests coexist.
func (d *deployment) apply(t testing.TB, suffix string, drop ...permission) identity {
	t.Helper()
	ctx := context.Background()
	cs := env.Client()
	name := func(n string) string {
		if suffix == "" {
			return n
		}
		return n + "-" + suffix
	}
	ns := d.namespace.Name
	create(t, func() error {
		_, err := cs.CoreV1().Namespaces().Create(ctx, d.namespace.DeepCopy(), metav1.CreateOptions{})
		return err
	})
	sa := d.serviceAccount.DeepCopy()
	sa.Name = name(sa.Name)
	create(t, func() error {
		_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{})
		return err
	})
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns}
	for _, r := range d.operatorClusterRoles() {
		r = r.DeepCopy()
		r.Name, r.Rules = name(r.Name), without(r.Rules, "", drop)
		create(t, func() error { _, err := cs.RbacV1().ClusterRoles().Create(ctx, r, metav1.CreateOptions{}); return err })
	}
	for _, r := range d.roles {
		r = r.DeepCopy()
		r.Name, r.Rules = name(r.Name), without(r.Rules, r.Namespace, drop)
		create(t, func() error {
			_, err := cs.RbacV1().Roles(r.Namespace).Create(ctx, r, metav1.CreateOptions{})
			return err
		})
	}
	for _, b := range d.clusterRoleBindings {
		b = b.DeepCopy()
		b.Name, b.RoleRef.Name, b.Subjects = name(b.Name), name(b.RoleRef.Name), []rbacv1.Subject{subject}
		create(t, func() error {
			_, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{})
			return err
		})
	}
	for _, b := range d.roleBindings {
		b = b.DeepCopy()
		b.Name, b.RoleRef.Name, b.Subjects = name(b.Name), name(b.RoleRef.Name), []rbacv1.Subject{subject}
		create(t, func() error {
			_, err := cs.RbacV1().RoleBindings(b.Namespace).Create(ctx, b, metav1.CreateOptions{})
			return err
		})
	}
	if suffix == "" {
		d.applyPolicies(t)
	}
	return identity{namespace: ns, name: sa.Name}
}

// applyPolicies creates config/policy's objects, which bind only the
// rendered identity (suffix ""), and waits until the API server enforces
// them.
func (d *deployment) applyPolicies(t testing.TB) {
	t.Helper()
	d.createPolicies(t)
	waitForPolicy(t, d.serviceAccountUser())
}

// createPolicies creates config/policy's objects, leaving those that
// exist, and waits until the API server enforces the service-account
// policy, which every operator startOperator runs needs
// (--identity-policy).
func (d *deployment) createPolicies(t testing.TB) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range d.policies {
		resource := map[string]string{
			"ValidatingAdmissionPolicy":        "validatingadmissionpolicies",
			"ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings",
		}[u.GetKind()]
		gvr := admissionregistrationv1.SchemeGroupVersion.WithResource(resource)
		create(t, func() error {
			_, err := dyn.Resource(gvr).Create(context.Background(), u.DeepCopy(), metav1.CreateOptions{})
			return err
		})
	}
	waitForIdentityPolicy(t)
}

// serviceAccountUser is the rendered ServiceAccount's user name.
func (d *deployment) serviceAccountUser() string {
	return identity{namespace: d.namespace.Name, name: d.serviceAccount.Name}.user()
}

// create runs a create, which may have been made by an earlier test.
func create(t testing.TB, fn func() error) {
	t.Helper()
	if err := fn(); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// scraper makes a ServiceAccount bound to the metrics-reader ClusterRole,
// as the comment in config/rbac says to bind a scraper, and returns a token
// for it.
func (d *deployment) scraper(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	cs := env.Client()
	ns := d.namespace.Name
	create(t, func() error {
		_, err := cs.CoreV1().Namespaces().Create(ctx, d.namespace.DeepCopy(), metav1.CreateOptions{})
		return err
	})
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "metrics-scraper", Namespace: ns}}
	create(t, func() error {
		_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{})
		return err
	})
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-scraper"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: metricsReader},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns}},
	}
	create(t, func() error {
		_, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{})
		return err
	})
	create(t, func() error {
		_, err := cs.RbacV1().ClusterRoles().Create(ctx, d.metricsReaderRole().DeepCopy(), metav1.CreateOptions{})
		return err
	})
	return token(t, identity{namespace: ns, name: sa.Name}, 3600)
}

func (d *deployment) metricsReaderRole() *rbacv1.ClusterRole {
	for _, r := range d.clusterRoles {
		if r.Name == metricsReader {
			return r
		}
	}
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: metricsReader}}
}

// token mints a token for id with the TokenRequest API, as the kubelet
// does for a pod's projected ServiceAccount token.
func token(t testing.TB, id identity, seconds int64) string {
	t.Helper()
	tr, err := env.Client().CoreV1().ServiceAccounts(id.namespace).CreateToken(context.Background(), id.name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("request a token for %s: %v", id.user(), err)
	}
	return tr.Status.Token
}

// writeKubeconfig writes a kubeconfig that holds only the API server's
// address, its CA and token: no client certificate.
func writeKubeconfig(t testing.TB, token string) string {
	t.Helper()
	cfg := env.Config()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["operator"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "operator"}
	kc.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}
