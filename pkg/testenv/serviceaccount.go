package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
)

// rbacTimeout bounds ApplyRBAC's wait for the API server's authorizer to
// see the bindings it created.
const rbacTimeout = 30 * time.Second

// ApplyRBAC renders the kustomize directory dir (kubectl kustomize, with
// the kubectl of Kubectl) and creates what a deployment's identity is made
// of: its Namespaces, ServiceAccounts, ClusterRoles, Roles,
// ClusterRoleBindings and RoleBindings. Every other kind it renders (CRDs,
// Deployments, Services, webhook configurations) is left out. An object
// that exists already is left as it is.
//
// It returns the ServiceAccounts it rendered once the API server
// authorizes each ServiceAccount a binding names for the first rule of the
// bound role: the authorizer sees new bindings a moment after they are
// created, and a test that started at once would see refusals RBAC does
// not cause.
func (e *Environment) ApplyRBAC(ctx context.Context, dir string) ([]types.NamespacedName, error) {
	objs, err := renderKustomize(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("apply RBAC: %w", err)
	}
	var rbac identityObjects
	for _, u := range objs {
		if err := rbac.add(u); err != nil {
			return nil, fmt.Errorf("apply RBAC of %s: %s %s: %w", dir, u.GetKind(), u.GetName(), err)
		}
	}
	if err := rbac.create(ctx, e.client); err != nil {
		return nil, fmt.Errorf("apply RBAC of %s: %w", dir, err)
	}
	wctx, cancel := context.WithTimeoutCause(ctx, rbacTimeout, fmt.Errorf("the API server did not authorize the bindings of %s within %s", dir, rbacTimeout))
	defer cancel()
	if err := rbac.waitAuthorized(wctx, e.client); err != nil {
		return nil, fmt.Errorf("apply RBAC: %w", err)
	}
	var sas []types.NamespacedName
	for _, sa := range rbac.serviceAccounts {
		sas = append(sas, types.NamespacedName{Namespace: sa.Namespace, Name: sa.Name})
	}
	return sas, nil
}

// ServiceAccountConfig returns a config of the control plane that
// authenticates as the ServiceAccount sa with nothing but a bearer token,
// which the TokenRequest API mints as the kubelet mints a pod's projected
// token, valid for expiration (0: an hour). The config holds the API
// server's CA and no client certificate: what the API server allows it is
// what RBAC grants sa.
func (e *Environment) ServiceAccountConfig(ctx context.Context, sa types.NamespacedName, expiration time.Duration) (*rest.Config, error) {
	if expiration == 0 {
		expiration = time.Hour
	}
	seconds := int64(expiration / time.Second)
	tr, err := e.client.CoreV1().ServiceAccounts(sa.Namespace).CreateToken(ctx, sa.Name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("request a token for ServiceAccount %s: %w", sa, err)
	}
	return &rest.Config{
		Host:            e.config.Host,
		BearerToken:     tr.Status.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: e.config.CAData},
	}, nil
}

// WriteKubeconfig writes a kubeconfig file for cfg (its host, CA, and
// client certificate or bearer token) to path, readable by the owner only,
// creating its directory if needed: give it to a process with
// --kubeconfig.
func WriteKubeconfig(path string, cfg *rest.Config) error {
	data, err := kubeconfig(cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}

// renderKustomize returns the objects kubectl kustomize renders of dir.
func renderKustomize(ctx context.Context, dir string) ([]*unstructured.Unstructured, error) {
	kubectl, err := Kubectl()
	if err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, kubectl, "kustomize", dir)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("kubectl kustomize %s: %w: %s", dir, err, strings.TrimSpace(stderr.String()))
	}
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(&stdout, 4096)
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decode what kubectl kustomize %s renders: %w", dir, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// identityObjects are the objects ApplyRBAC creates, in the order it
// creates them.
type identityObjects struct {
	namespaces          []*corev1.Namespace
	serviceAccounts     []*corev1.ServiceAccount
	clusterRoles        []*rbacv1.ClusterRole
	roles               []*rbacv1.Role
	clusterRoleBindings []*rbacv1.ClusterRoleBinding
	roleBindings        []*rbacv1.RoleBinding
}

// add keeps u if it is of a kind ApplyRBAC creates.
func (o *identityObjects) add(u *unstructured.Unstructured) error {
	var obj runtime.Object
	switch u.GetKind() {
	case "Namespace":
		obj = appendNew(&o.namespaces)
	case "ServiceAccount":
		obj = appendNew(&o.serviceAccounts)
	case "ClusterRole":
		obj = appendNew(&o.clusterRoles)
	case "Role":
		obj = appendNew(&o.roles)
	case "ClusterRoleBinding":
		obj = appendNew(&o.clusterRoleBindings)
	case "RoleBinding":
		obj = appendNew(&o.roleBindings)
	default:
		return nil
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, obj, true)
}

// appendNew appends a new T to s and returns it.
func appendNew[T any](s *[]*T) *T {
	v := new(T)
	*s = append(*s, v)
	return v
}
