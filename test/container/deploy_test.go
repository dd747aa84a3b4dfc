package container

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/opkit-dev/opkit/pkg/testenv"
)

// deployment is what config/default deploys, as kubectl kustomize renders
// it.
type deployment struct {
	objects []*unstructured.Unstructured
	deploy  *appsv1.Deployment
}

// render runs kubectl kustomize config/default: the test reads the
// Deployment and the RBAC objects from there rather than repeating them.
func render(t *testing.T) deployment {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..")) // opkit's checkout: this test is a module of its own
	if err != nil {
		t.Fatal(err)
	}
	kubectl, err := testenv.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(kubectl, "kustomize", filepath.Join(root, "config", "default"))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize config/default: %v: %s", err, stderr.Bytes())
	}
	var d deployment
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode kubectl kustomize's output: %v", err)
		}
		d.objects = append(d.objects, u)
		if u.GetKind() == "Deployment" {
			d.deploy = &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d.deploy); err != nil {
				t.Fatal(err)
			}
		}
	}
	if d.deploy == nil {
		t.Fatal("config/default renders no Deployment")
	}
	return d
}

// manager is the Deployment's operator container.
func (d deployment) manager(t *testing.T) corev1.Container {
	t.Helper()
	for _, c := range d.deploy.Spec.Template.Spec.Containers {
		if c.Name == "manager" {
			return c
		}
	}
	t.Fatalf("the Deployment %s has no container named manager", d.deploy.Name)
	return corev1.Container{}
}

// applyIdentity creates config/default's Namespace, ServiceAccount, roles
// and bindings, and its admission policies, which bound the operator's
// writes and pin the ServiceAccount a Mirror acts as (the CRD is installed
// by TestMain; the Deployment and the Service need a kubelet and a Service
// network that are not here).
func (d deployment) applyIdentity(t *testing.T, c client.Client) {
	t.Helper()
	for _, u := range d.objects {
		switch u.GetKind() {
		case "Namespace", "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding",
			"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
			if err := c.Create(t.Context(), u.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
			}
		}
	}
}

// token mints a token for the ServiceAccount namespace/name with the
// TokenRequest API, as the kubelet does for a pod's projected volume.
func token(t *testing.T, namespace, name string) string {
	t.Helper()
	tr, err := env.Client().CoreV1().ServiceAccounts(namespace).CreateToken(t.Context(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("mint a token for the ServiceAccount %s/%s: %v", namespace, name, err)
	}
	return tr.Status.Token
}

// serviceAccount creates a ServiceAccount in namespace, bound to the
// ClusterRole role if role is not empty, and returns a token for it.
func serviceAccount(t *testing.T, c client.Client, namespace, name, role string) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := c.Create(t.Context(), sa); err != nil {
		t.Fatal(err)
	}
	if role != "" {
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: namespace + "-" + name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}},
		}
		if err := c.Create(t.Context(), crb); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Delete(t.Context(), crb) })
	}
	return token(t, namespace, name)
}

// clusterRoleNamed returns the name config/default gives the ClusterRole
// whose name ends in suffix (kustomize adds a prefix).
func (d deployment) clusterRoleNamed(t *testing.T, suffix string) string {
	t.Helper()
	for _, u := range d.objects {
		if u.GetKind() == "ClusterRole" && strings.HasSuffix(u.GetName(), suffix) {
			return u.GetName()
		}
	}
	t.Fatalf("config/default renders no ClusterRole named *%s", suffix)
	return ""
}

// containerPort returns the manager's port named name.
func containerPort(t *testing.T, c corev1.Container, name string) int32 {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	t.Fatalf("the manager container has no port named %s", name)
	return 0
}

// rebind rewrites the manager's args that bind port to bind to addr
// instead: the container shares the host's network namespace with
// whatever else runs here, where a pod would have its own.
func rebind(t *testing.T, args []string, port int32, addr string) []string {
	t.Helper()
	out := make([]string, len(args))
	found := false
	for i, a := range args {
		out[i] = a
		if flag, val, ok := strings.Cut(a, "="); ok && strings.HasSuffix(flag, "-bind-address") && strings.HasSuffix(val, fmt.Sprintf(":%d", port)) {
			out[i], found = flag+"="+addr, true
		}
	}
	if !found {
		t.Fatalf("no --*-bind-address argument in %q binds port %d", args, port)
	}
	return out
}
