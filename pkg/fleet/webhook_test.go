package fleet_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/cert"

	"github.com/opkit-dev/opkit/pkg/fleet"
	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/webhook"
	"github.com/opkit-dev/opkit/pkg/webhook/requester"
)

var configMapKind = corev1.SchemeGroupVersion.WithKind("ConfigMap")

// seen records the members whose context the webhooks ran with.
type seen struct {
	mu      sync.Mutex
	members []string
}

func (s *seen) add(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := "<none>"
	if c := fleet.ClusterFrom(ctx); c != nil {
		name = c.Name()
	}
	s.members = append(s.members, name)
}

func (s *seen) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.members
	s.members = nil
	return out
}

// memberHooks label each ConfigMap with the member its request came from
// and record that member.
func memberHooks(s *seen) webhook.Hooks[*corev1.ConfigMap] {
	return webhook.Hooks[*corev1.ConfigMap]{
		Defaulter: webhook.DefaulterFunc[*corev1.ConfigMap](func(ctx context.Context, cm *corev1.ConfigMap) error {
			s.add(ctx)
			if c := fleet.ClusterFrom(ctx); c != nil {
				metav1.SetMetaDataLabel(&cm.ObjectMeta, "member", c.Name())
			}
			return nil
		}),
		Validator: webhook.ValidatorFuncs[*corev1.ConfigMap]{Create: func(ctx context.Context, _ *corev1.ConfigMap) (webhook.Warnings, error) {
			s.add(ctx)
			return nil, nil
		}},
	}
}

// webhookManager returns a manager of the test control plane with a
// webhook server that is never started: tests drive its mux in process.
func webhookManager(t *testing.T, clientCAFile string) *manager.Manager {
	t.Helper()
	m, err := manager.New(env.Config(), manager.Options{
		Metrics: manager.MetricsOptions{BindAddress: "0"},
		Health:  manager.HealthOptions{BindAddress: "0"},
		Webhook: manager.WebhookOptions{Host: "127.0.0.1", Port: 9443, CertDir: t.TempDir(), ClientCAFile: clientCAFile},
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// engaged returns a fleet with members of the given names on the test
// control plane, engaged until the test ends.
func engaged(t *testing.T, names ...string) *fleet.Fleet {
	t.Helper()
	f := newFleet(t, fleet.Options{ProbeInterval: -1})
	for _, name := range names {
		if err := f.Engage(t.Context(), fleet.Member{Name: name, Config: env.Config()}); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// admissionReview is an AdmissionReview of user creating a ConfigMap.
func admissionReview(t testing.TB, user string) []byte {
	t.Helper()
	obj, err := json.Marshal(&corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "cm"},
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       "uid-1",
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "configmaps"},
			Namespace: "team", Name: "cm", Operation: admissionv1.Create,
			UserInfo: authenticationv1.UserInfo{Username: user},
			Object:   runtime.RawExtension{Raw: obj},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// verdict is what the webhook server answered a review: the HTTP status,
// and for a 200 whether the review was allowed and its message.
type verdict struct {
	code    int
	allowed bool
	message string
	patched bool
}

// post sends a review to m's webhook mux at rawPath (escaped as given),
// with tlsState as the connection's.
func post(t *testing.T, m *manager.Manager, rawPath string, tlsState *tls.ConnectionState) verdict {
	t.Helper()
	r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "https://127.0.0.1:9443"+rawPath, bytes.NewReader(admissionReview(t, "alice")))
	r.Header.Set("Content-Type", "application/json")
	r.TLS = tlsState
	w := httptest.NewRecorder()
	m.WebhookServer().WebhookMux().ServeHTTP(w, r)
	v := verdict{code: w.Code}
	if w.Code != http.StatusOK {
		v.message = w.Body.String()
		return v
	}
	var rev admissionv1.AdmissionReview
	if err := json.Unmarshal(w.Body.Bytes(), &rev); err != nil || rev.Response == nil {
		t.Fatalf("POST %s: %d %q: not an AdmissionReview: %v", rawPath, w.Code, w.Body, err)
	}
	v.allowed, v.patched = rev.Response.Allowed, len(rev.Response.Patch) > 0
	if rev.Response.Result != nil {
		v.message = rev.Response.Result.Message
	}
	return v
}

// A member's path runs the webhooks with that member in the context; any
// other path is refused, whatever it holds: a member not engaged, a name
// that is not a member's name (escaped slashes, dot-dot, too long), a
// path the mux does not serve.
func TestMemberPathsServeEngagedMembersOnly(t *testing.T) {
	m := webhookManager(t, "")
	f := engaged(t, "a", "b.eu-1")
	var s seen
	if err := fleet.RegisterWebhooks(m, f, memberHooks(&s), fleet.WebhookOptions{}); err != nil {
		t.Fatal(err)
	}
	validate, mutate := webhook.ValidatePath(configMapKind), webhook.MutatePath(configMapKind)
	for _, tt := range []struct {
		member string
		path   string
	}{{"a", validate}, {"a", mutate}, {"b.eu-1", validate}} {
		v := post(t, m, fleet.MemberPath(tt.member, tt.path), nil)
		if !v.allowed || v.code != http.StatusOK {
			t.Errorf("%s: %+v, want allowed", fleet.MemberPath(tt.member, tt.path), v)
		}
		if got := s.take(); len(got) != 1 || got[0] != tt.member {
			t.Errorf("%s: ran with members %q, want [%q]", fleet.MemberPath(tt.member, tt.path), got, tt.member)
		}
		if tt.path == mutate && !v.patched {
			t.Errorf("%s: no patch, want the member's label", fleet.MemberPath(tt.member, tt.path))
		}
	}
	if err := fleet.RegisterWebhooks(m, f, memberHooks(&s), fleet.WebhookOptions{}); !errors.Is(err, webhook.ErrRegistered) {
		t.Errorf("RegisterWebhooks again = %v, want ErrRegistered", err)
	}

	for _, tt := range []struct {
		name, rawPath, want string
	}{
		{"not engaged", "/members/c" + validate, `member cluster "c": the member cluster is not engaged`},
		{"escaped slash", "/members/a%2Fb" + validate, "names no member"},
		{"escaped dot-dot", "/members/%2E%2E" + validate, ""},
		{"dot-dot and a slash, escaped", "/members/..%2Fa" + validate, "names no member"},
		{"dot-dot inside", "/members/a..b" + validate, "names no member"},
		{"dot", "/members/." + validate, ""},
		{"dot-dot", "/members/.." + validate, ""},
		{"escaped NUL", "/members/a%00" + validate, "names no member"},
		{"space", "/members/a%20b" + validate, "names no member"},
		{"too long", "/members/" + strings.Repeat("a", 254) + validate, "names no member"},
		{"empty", "/members/" + validate, ""},
		{"two segments", "/members/a/b" + validate, ""},
		{"no member", "/members" + validate, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := post(t, m, tt.rawPath, nil)
			if v.allowed {
				t.Fatalf("POST %s: allowed, want refused", tt.rawPath)
			}
			if v.code == http.StatusOK && !strings.Contains(v.message, tt.want) {
				t.Errorf("POST %s: %q, want it to say %q", tt.rawPath, v.message, tt.want)
			}
			if got := s.take(); len(got) != 0 {
				t.Errorf("POST %s: the webhooks ran, with members %q", tt.rawPath, got)
			}
		})
	}
}

// caPair is a CA and a client certificate it signed, as an API server
// presents to the webhooks it calls.
type caPair struct {
	caPEM []byte
	chain []*x509.Certificate // the client certificate, then the CA
}

func newCAPair(t *testing.T, name string) caPair {
	t.Helper()
	crt, _, err := cert.GenerateSelfSignedCertKey(name, []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var chain []*x509.Certificate
	var caPEM []byte
	for rest, i := crt, 0; ; i++ {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		chain = append(chain, c)
		if i > 0 {
			caPEM = append(caPEM, pem.EncodeToMemory(block)...)
		}
	}
	return caPair{caPEM: caPEM, chain: chain}
}

// With WebhookOptions.Callers, a member's path takes only its own API
// server's calls: another member's API server, or a caller with no
// verified certificate, is refused before anything is said of which
// members are engaged.
func TestMemberPathsTakeTheirMembersCallersOnly(t *testing.T) {
	a, b := newCAPair(t, "member-a"), newCAPair(t, "member-b")
	callers, err := fleet.CallersByCA(map[string][]byte{"a": a.caPEM, "b": b.caPEM})
	if err != nil {
		t.Fatal(err)
	}
	m := webhookManager(t, "")
	f := engaged(t, "a")
	var s seen
	if err := fleet.RegisterWebhooks(m, f, memberHooks(&s), fleet.WebhookOptions{Callers: callers}); err != nil {
		t.Fatal(err)
	}
	validate := webhook.ValidatePath(configMapKind)
	as := func(p caPair) *tls.ConnectionState {
		return &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{p.chain}, PeerCertificates: p.chain[:1]}
	}
	if v := post(t, m, fleet.MemberPath("a", validate), as(a)); !v.allowed {
		t.Errorf("a's API server on a's path: %+v, want allowed", v)
	}
	if got := s.take(); len(got) != 1 || got[0] != "a" {
		t.Errorf("ran with members %q, want [a]", got)
	}
	for _, tt := range []struct {
		name, member string
		tls          *tls.ConnectionState
		want         string
	}{
		{"b's API server on a's path", "a", as(b), `member cluster "a": the caller is not its API server`},
		{"a's API server on b's path, b not engaged", "b", as(a), `member cluster "b": the caller is not its API server`},
		{"no TLS", "a", nil, "no verified client certificate"},
		{"no verified certificate", "a", &tls.ConnectionState{}, "no verified client certificate"},
		{"a's leaf alone, as if it were a CA", "a", &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{a.chain[:1]}}, "not its API server"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := post(t, m, fleet.MemberPath(tt.member, validate), tt.tls)
			if v.allowed || !strings.Contains(v.message, tt.want) {
				t.Errorf("%+v, want refused saying %q", v, tt.want)
			}
			if got := s.take(); len(got) != 0 {
				t.Errorf("the webhooks ran, with members %q", got)
			}
		})
	}
	if _, err := fleet.CallersByCA(map[string][]byte{"a": []byte("not PEM")}); err == nil {
		t.Error("CallersByCA of no certificate: nil error")
	}
}

// Requesters never checks without a member: there is no hub to fall back
// to.
func TestRequestersNeedAMember(t *testing.T) {
	r, err := fleet.NewRequesters(requester.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = r.Check(t.Context(), requester.Permission{Verb: "get", Resource: "secrets"})
	if !errors.Is(err, fleet.ErrNoMember) {
		t.Errorf("Check without a member = %v, want ErrNoMember", err)
	}
	err = r.CheckUser(t.Context(), authenticationv1.UserInfo{Username: "alice"}, requester.Permission{Verb: "get", Resource: "secrets"})
	if !errors.Is(err, fleet.ErrNoMember) {
		t.Errorf("CheckUser without a member = %v, want ErrNoMember", err)
	}
	if _, err := fleet.NewRequesters(requester.Options{CacheSize: -1}); err == nil {
		t.Error("NewRequesters with a negative CacheSize: nil error")
	}
}

// A webhook's context ends when its member is disengaged, with a cause
// wrapping ErrNotEngaged, so a request in flight is refused, not judged
// for a member that has gone.
func TestMemberWebhookEndsWhenItsMemberGoes(t *testing.T) {
	m := webhookManager(t, "")
	f := newFleet(t, fleet.Options{ProbeInterval: -1})
	life, disengage := context.WithCancel(t.Context())
	if err := f.Engage(life, fleet.Member{Name: "a", Config: env.Config()}); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	hooks := webhook.Hooks[*corev1.ConfigMap]{Validator: webhook.ValidatorFuncs[*corev1.ConfigMap]{
		Create: func(ctx context.Context, _ *corev1.ConfigMap) (webhook.Warnings, error) {
			close(started)
			<-ctx.Done()
			if !errors.Is(context.Cause(ctx), fleet.ErrNotEngaged) {
				t.Errorf("cause %v, want ErrNotEngaged", context.Cause(ctx))
			}
			return nil, context.Cause(ctx)
		},
	}}
	if err := fleet.RegisterWebhooks(m, f, hooks, fleet.WebhookOptions{}); err != nil {
		t.Fatal(err)
	}
	got := make(chan verdict, 1)
	go func() { got <- post(t, m, fleet.MemberPath("a", webhook.ValidatePath(configMapKind)), nil) }()
	<-started
	disengage()
	if v := <-got; v.allowed || !strings.Contains(v.message, "not engaged") {
		t.Errorf("%+v, want refused saying the member is not engaged", v)
	}
}
