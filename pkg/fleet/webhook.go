package fleet

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/opkit-dev/opkit/pkg/manager"
	"github.com/opkit-dev/opkit/pkg/webhook"
)

// MembersPath is the prefix of the paths RegisterWebhooks serves: a
// member's webhooks are at MembersPath + "/" + its name + the path package
// webhook's Register would serve them at (MemberPath).
const MembersPath = "/members"

// memberPattern is MembersPath with the member's name as a ServeMux
// wildcard, which matches one whole path segment.
const memberPattern = MembersPath + "/{member}"

// maxMemberName bounds a member's name in a webhook path: a DNS subdomain's
// length.
const maxMemberName = 253

// MemberPath returns the path of member's webhook at path, such as
// MemberPath("eu-1", webhook.ValidatePath(gvk)) =
// "/members/eu-1/validate--v1-configmap": the path each member's webhook
// configuration names.
func MemberPath(member, path string) string { return MembersPath + "/" + member + path }

// CallerCheck tells whether the caller of member's webhook path is member's
// API server, from its client certificate as the webhook server verified
// it against manager.Options.Webhook.ClientCAFile: verified holds each
// chain that verified, its leaf first and a CA of that file last
// (tls.ConnectionState.VerifiedChains). It is called for every request on
// a member's path, concurrently, and must not block.
type CallerCheck func(member string, verified [][]*x509.Certificate) bool

// CallersByCA returns a CallerCheck for members whose API servers each
// present a client certificate of a CA of their own: the caller of a
// member's path is its API server if a certificate in cas[member] (PEM)
// is in a chain its certificate verified by: the CA that signed it, an
// intermediate CA, or the certificate itself. Put every member's CA in
// the webhook server's ClientCAFile too, which verifies the chain. A
// member absent from cas has no caller. It fails if a value holds no PEM
// certificate.
func CallersByCA(cas map[string][]byte) (CallerCheck, error) {
	byMember := make(map[string]map[[sha256.Size]byte]bool, len(cas))
	for member, b := range cas {
		pool, err := parseCAs(b)
		if err != nil {
			return nil, fmt.Errorf("fleet: CallersByCA: member %q: %w", member, err)
		}
		byMember[member] = pool
	}
	return func(member string, verified [][]*x509.Certificate) bool {
		pool := byMember[member]
		for _, chain := range verified {
			for _, c := range chain {
				if pool[sha256.Sum256(c.Raw)] {
					return true
				}
			}
		}
		return false
	}, nil
}

// parseCAs returns the fingerprints of the certificates in b (PEM).
func parseCAs(b []byte) (map[[sha256.Size]byte]bool, error) {
	out := map[[sha256.Size]byte]bool{}
	for {
		var block *pem.Block
		if block, b = pem.Decode(b); block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse a CA certificate: %w", err)
		}
		out[sha256.Sum256(c.Raw)] = true
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM certificate")
	}
	return out, nil
}

// WebhookOptions configure RegisterWebhooks. The zero value is valid.
type WebhookOptions struct {
	// Callers, when set, authenticates the caller of each member's path as
	// that member's API server (CallersByCA): a request on a member's path
	// whose client certificate is not the member's is refused, so that
	// one member's API server, or a client holding another member's
	// certificate, cannot have its requests judged as another member's.
	// It needs manager.Options.Webhook.ClientCAFile, without which every
	// request on a member's path is refused. Defaults to nil: the path
	// alone names the member, and any caller the webhook server lets in
	// may name any member.
	Callers CallerCheck
}

// RegisterWebhooks serves h on m's webhook server once per member of f,
// at MemberPath(member, path) for each path package webhook's Register
// would serve h at, so that each member's API server calls its own path.
// A request on a member's path runs h with the member in its context
// (ClusterFrom), under a context that also ends when the member is
// disengaged. It is refused, whatever the webhook configuration's
// failurePolicy, with 403 and a message saying why, unless:
//
//   - the member's name in the path is at most 253 bytes of ASCII letters,
//     digits, '-', '.', '_' and ':', and is neither "." nor "..", nor
//     holds ".." (a member named otherwise has no webhook path);
//   - with opts.Callers, the caller's client certificate is the member's;
//   - the member is engaged (ErrNotEngaged).
//
// RegisterWebhooks fails as webhook.Register does (webhook.ErrNoServer,
// webhook.ErrRegistered, a type not in m's scheme).
func RegisterWebhooks[T runtime.Object](m *manager.Manager, f *Fleet, h webhook.Hooks[T], opts WebhookOptions) error {
	hs, err := webhook.Handlers(m, h)
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	deny := denyWebhook()
	for _, path := range slices.Sorted(maps.Keys(hs)) {
		mh := &memberWebhook{fleet: f, callers: opts.Callers, next: hs[path], deny: deny}
		if err := webhook.Serve(m, memberPattern+path, mh); err != nil {
			return fmt.Errorf("fleet: %w", err)
		}
	}
	return nil
}

// memberWebhook serves one admission webhook on every member's path.
type memberWebhook struct {
	fleet   *Fleet
	callers CallerCheck  // nil: the path names the member
	next    http.Handler // the webhook, as package webhook builds it
	deny    http.Handler // answers an AdmissionReview with refusedKey's error
}

// refusedKey carries, to deny, why a request is refused.
type refusedKey struct{}

func (h *memberWebhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c, err := h.member(r)
	if err != nil {
		h.deny.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), refusedKey{}, err)))
		return
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	stop := context.AfterFunc(c.life, func() { cancel(fmt.Errorf("cluster %q: %w", c.name, ErrNotEngaged)) })
	defer stop()
	h.next.ServeHTTP(w, r.WithContext(context.WithValue(ctx, clusterKey{}, c)))
}

// member returns the engaged member whose path r came on, if its caller
// may call that path. Its errors say nothing of which members are
// engaged until the caller is known to be the member's API server.
func (h *memberWebhook) member(r *http.Request) (*Cluster, error) {
	name := r.PathValue("member")
	if !validMemberName(name) {
		return nil, fmt.Errorf("the webhook path names no member: a member's name is at most %d letters, digits, '-', '.', '_' or ':', and holds no \"..\"", maxMemberName)
	}
	if h.callers != nil {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
			return nil, fmt.Errorf("member cluster %q: the caller presented no verified client certificate: set manager.Options.Webhook.ClientCAFile", name)
		}
		if !h.callers(name, r.TLS.VerifiedChains) {
			return nil, fmt.Errorf("member cluster %q: the caller is not its API server (fleet.WebhookOptions.Callers): point each member's webhook configuration at its own path", name)
		}
	}
	c, err := h.fleet.Cluster(name)
	if err != nil {
		return nil, fmt.Errorf("member %w: this operator serves the webhooks of engaged members only", err)
	}
	return c, nil
}

// validMemberName reports whether name can be a path segment that means
// nothing but itself.
func validMemberName(name string) bool {
	if name == "" || len(name) > maxMemberName || name == "." {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch b := name[i]; {
		case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9', b == '-', b == '_', b == ':':
		case b == '.':
			if i+1 < len(name) && name[i+1] == '.' {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// denyWebhook answers every AdmissionReview with 403 Forbidden and the
// error in the request's context (refusedKey), so that a refusal denies
// the request under either failurePolicy.
func denyWebhook() http.Handler {
	return &admission.Webhook{Handler: admission.HandlerFunc(func(ctx context.Context, _ admission.Request) admission.Response {
		err, _ := ctx.Value(refusedKey{}).(error)
		if err == nil {
			err = errors.New("refused")
		}
		return admission.Errored(http.StatusForbidden, err)
	})}
}
