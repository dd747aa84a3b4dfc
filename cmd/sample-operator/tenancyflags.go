package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/opkit-dev/opkit/cmd/sample-operator/mirror"
)

// tenancyFlags are the flags of the Mirrors' tenancy policy (mirror.Policy).
type tenancyFlags struct {
	allowNamespaces   string
	secretTypes       string
	maxTargets        int
	operatorNamespace string
	identityPolicy    string
	actAsOperator     bool
}

func (t *tenancyFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.allowNamespaces, "allow-target-namespaces", "", "comma-separated protected namespaces (kube-* and the operator's own) that may receive copies anyway, when they accept them like any other; empty: none")
	fs.StringVar(&t.secretTypes, "allow-secret-types", "", "comma-separated Secret types copied besides Opaque and kubernetes.io/tls (e.g. kubernetes.io/dockerconfigjson); empty: none")
	fs.IntVar(&t.maxTargets, "max-targets", mirror.DefaultMaxTargets, "namespaces one Mirror copies into at most; past it, the first by name, and the Mirror says so (reason TooManyTargets)")
	fs.StringVar(&t.identityPolicy, "identity-policy", "", "the ValidatingAdmissionPolicyBinding that pins the ServiceAccount a Mirror may name (config/default: mirror-service-account); while it or its policy is missing, the operator acts for no Mirror (reason IdentityUnpinned); empty: not checked")
	fs.BoolVar(&t.actAsOperator, "act-as-operator", false, "read sources and write copies as the operator's own ServiceAccount, not each Mirror's: only to measure what acting as the Mirror's costs; config/rbac grants the operator too little for it, and nothing then stops a Mirror from copying what its creator may not")
	fs.StringVar(&t.operatorNamespace, "operator-namespace", "", "the operator's own namespace, which receives no copy unless --allow-target-namespaces lists it; defaults to the pod's, else none")
}

// check validates what can be checked before the operator's namespace is
// known.
func (t tenancyFlags) check() error {
	if t.maxTargets < 1 {
		return fmt.Errorf("--max-targets is %d: it must be at least 1", t.maxTargets)
	}
	for _, ns := range list(t.allowNamespaces) {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("--allow-target-namespaces: %q is not a namespace name: %s", ns, strings.Join(errs, "; "))
		}
	}
	if errs := validation.IsDNS1123Subdomain(t.identityPolicy); t.identityPolicy != "" && len(errs) > 0 {
		return fmt.Errorf("--identity-policy: %q is not the name of a ValidatingAdmissionPolicyBinding: %s", t.identityPolicy, strings.Join(errs, "; "))
	}
	for _, typ := range list(t.secretTypes) {
		if strings.ContainsAny(typ, " \t=") {
			return fmt.Errorf("--allow-secret-types: %q is not a Secret type", typ)
		}
	}
	return nil
}

// policy returns the Mirrors' tenancy policy. The operator's namespace is
// --operator-namespace, else the pod's read from podNamespace (a file),
// else none; an allowed namespace that is not protected is an error, since
// every namespace that accepts copies may receive them already.
func (t tenancyFlags) policy(podNamespace string) (mirror.Policy, error) {
	if err := t.check(); err != nil {
		return mirror.Policy{}, err
	}
	p := mirror.Policy{OperatorNamespace: t.operatorNamespace, AllowNamespaces: list(t.allowNamespaces), MaxTargets: t.maxTargets, IdentityPolicy: t.identityPolicy, ActAsOperator: t.actAsOperator}
	if p.OperatorNamespace == "" {
		b, err := os.ReadFile(podNamespace)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return mirror.Policy{}, fmt.Errorf("find the operator's namespace, which receives no copy (set --operator-namespace): %w", err)
		}
		p.OperatorNamespace = strings.TrimSpace(string(b))
	}
	for _, ns := range p.AllowNamespaces {
		if !strings.HasPrefix(ns, "kube-") && ns != p.OperatorNamespace {
			return mirror.Policy{}, fmt.Errorf("--allow-target-namespaces: %s is not protected (only kube-* and the operator's namespace %q are): it receives copies when it accepts them", ns, p.OperatorNamespace)
		}
	}
	for _, typ := range list(t.secretTypes) {
		p.SecretTypes = append(p.SecretTypes, corev1.SecretType(typ))
	}
	return p, nil
}

// list splits a comma-separated flag value, dropping blanks.
func list(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
