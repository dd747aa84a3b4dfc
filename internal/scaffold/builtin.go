package scaffold

import (
	"slices"
	"strings"
)

// builtinGroups maps the groups of Kubernetes' built-in types, as create api
// --resource=false takes them, to their package directory in k8s.io/api.
// The core group is "" or "core".
var builtinGroups = map[string]string{
	"":                             "core",
	"core":                         "core",
	"admissionregistration.k8s.io": "admissionregistration",
	"apps":                         "apps",
	"autoscaling":                  "autoscaling",
	"batch":                        "batch",
	"certificates.k8s.io":          "certificates",
	"coordination.k8s.io":          "coordination",
	"discovery.k8s.io":             "discovery",
	"events.k8s.io":                "events",
	"networking.k8s.io":            "networking",
	"node.k8s.io":                  "node",
	"policy":                       "policy",
	"rbac.authorization.k8s.io":    "rbac",
	"scheduling.k8s.io":            "scheduling",
	"storage.k8s.io":               "storage",
}

func builtinGroupList() string {
	var gs []string
	for g := range builtinGroups {
		if g != "" {
			gs = append(gs, g)
		}
	}
	slices.Sort(gs)
	return strings.Join(gs, ", ")
}

// clusterScoped are the built-in kinds that no namespace holds, of those a
// controller commonly watches.
var clusterScoped = []string{
	"Namespace", "Node", "PersistentVolume", "ClusterRole", "ClusterRoleBinding",
	"StorageClass", "CSIDriver", "CSINode", "PriorityClass", "RuntimeClass",
	"IngressClass", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration",
	"CertificateSigningRequest", "VolumeAttachment",
}

// fixture is a valid object of a common built-in kind for the scaffolded
// test: the fields the API server requires, and the imports they need. A
// kind not listed gets none, which suits most kinds.
type fixture struct {
	fields  string
	imports []string
}

const podTemplate = `corev1.PodTemplateSpec{
	ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "test"}},
	Spec:       corev1.PodSpec{RestartPolicy: %s, Containers: []corev1.Container{{Name: "app", Image: "app"}}},
}`

func builtinFixture(dir, version, kind string) fixture {
	alias := dir + version
	selector := "Selector: &metav1.LabelSelector{MatchLabels: map[string]string{\"app\": \"test\"}},\n"
	tmpl := func(policy string) string {
		return strings.Replace(podTemplate, "%s", "corev1.RestartPolicy"+policy, 1)
	}
	core := []string{`corev1 "k8s.io/api/core/v1"`}
	if dir == "core" {
		core = nil
	}
	switch {
	case dir == "apps" && slices.Contains([]string{"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"}, kind):
		return fixture{fields: "Spec: " + alias + "." + kind + "Spec{\n" + selector + "Template: " + tmpl("Always") + ",\n},", imports: core}
	case dir == "batch" && kind == "Job":
		return fixture{fields: "Spec: " + alias + ".JobSpec{Template: " + tmpl("Never") + "},", imports: core}
	case dir == "core" && kind == "Pod":
		return fixture{fields: "Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: \"app\", Image: \"app\"}}},"}
	case dir == "core" && kind == "Service":
		return fixture{fields: "Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},"}
	}
	return fixture{}
}
