package webhook_test

import (
	"fmt"
	"net"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
)

// Two versions of Gadget (testdata/gadgets.yaml): GadgetV1 says host and
// port, GadgetV2, the hub, says endpoint and tls; v1 keeps tls in
// tlsAnnotation so that a round trip loses nothing.
var (
	gadgetV1 = schema.GroupVersion{Group: "conv.webhook-test.opkit.dev", Version: "v1"}
	gadgetV2 = schema.GroupVersion{Group: "conv.webhook-test.opkit.dev", Version: "v2"}
)

const tlsAnnotation = "conv.webhook-test.opkit.dev/tls"

type GadgetV1 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Host string `json:"host,omitempty"`
		Port int32  `json:"port,omitempty"`
	} `json:"spec"`
}

type GadgetV2 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Endpoint string `json:"endpoint,omitempty"`
		TLS      bool   `json:"tls,omitempty"`
	} `json:"spec"`
}

func (g *GadgetV1) DeepCopyObject() runtime.Object {
	c := *g
	g.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

func (g *GadgetV2) DeepCopyObject() runtime.Object {
	c := *g
	g.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// Hub makes v2 the hub, in kubebuilder's style.
func (*GadgetV2) Hub() {}

// ConvertTo and ConvertFrom make v1 a spoke, in kubebuilder's style.
func (g *GadgetV1) ConvertTo(hub conversion.Hub) error { return v1ToV2(g, hub.(*GadgetV2)) }

func (g *GadgetV1) ConvertFrom(hub conversion.Hub) error { return v2ToV1(hub.(*GadgetV2), g) }

func v1ToV2(src *GadgetV1, dst *GadgetV2) error {
	src.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
	dst.Spec.Endpoint = net.JoinHostPort(src.Spec.Host, strconv.Itoa(int(src.Spec.Port)))
	if v, ok := dst.Annotations[tlsAnnotation]; ok {
		dst.Spec.TLS = v == "true"
		delete(dst.Annotations, tlsAnnotation)
		if len(dst.Annotations) == 0 {
			dst.Annotations = nil
		}
	}
	return nil
}

func v2ToV1(src *GadgetV2, dst *GadgetV1) error {
	host, port, err := net.SplitHostPort(src.Spec.Endpoint)
	if err != nil {
		return fmt.Errorf("endpoint %q is not host:port", src.Spec.Endpoint)
	}
	p, err := strconv.ParseInt(port, 10, 32)
	if err != nil {
		return fmt.Errorf("endpoint %q: the port is not a number", src.Spec.Endpoint)
	}
	src.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
	dst.Spec.Host, dst.Spec.Port = host, int32(p)
	if src.Spec.TLS {
		if dst.Annotations == nil {
			dst.Annotations = map[string]string{}
		}
		dst.Annotations[tlsAnnotation] = "true"
	}
	return nil
}

// gadgetScheme returns client-go's scheme with both versions of Gadget.
func gadgetScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	for gv, obj := range map[schema.GroupVersion]runtime.Object{gadgetV1: &GadgetV1{}, gadgetV2: &GadgetV2{}} {
		s.AddKnownTypeWithName(gv.WithKind("Gadget"), obj)
		metav1.AddToGroupVersion(s, gv)
	}
	return s
}
