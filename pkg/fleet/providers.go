package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/opkit-dev/opkit/pkg/cache"
)

// Namespaces is a Provider of the namespaces of one API server whose
// labels match Selector: each is a member named after it and confined to
// it (Member.Namespace), engaged while it exists and matches. Fleets of a
// thousand members fit on one API server this way, for tests and scale
// runs, and tenants that are namespaces can be reconciled as members.
type Namespaces struct {
	// Config reaches the API server. Required.
	Config *rest.Config
	// Selector picks the namespaces. Required: a fleet of every namespace
	// would engage kube-system too.
	Selector labels.Selector
	// Logger logs the provider's cache. Defaults to logr.Discard().
	Logger logr.Logger
}

var _ Provider = Namespaces{}

// Run engages the matching namespaces until ctx ends.
func (p Namespaces) Run(ctx context.Context, e Engager) error {
	if p.Config == nil || p.Selector == nil {
		return errors.New("run the Namespaces fleet provider: Config and Selector are required")
	}
	members := newMemberSet(ctx, e, p.Logger)
	defer members.stop()
	return watchHub[*corev1.Namespace](ctx, p.Config, p.Logger, nil, cache.TypeOptions{LabelSelector: p.Selector},
		func(ns *corev1.Namespace) {
			members.engage(Member{Name: ns.Name, Config: p.Config, Namespace: ns.Name}, nil)
		},
		func(ns *corev1.Namespace) { members.disengage(ns.Name) })
}

// KubeconfigSecrets is a Provider of the members whose kubeconfigs are
// Secrets on the hub: each Secret in Namespace whose labels match Selector
// is a member named after the Secret, reached with the kubeconfig in its
// data at Key (its current context). A Secret changed engages its member
// anew; one deleted, or whose kubeconfig is refused, disengages it.
//
// Whoever can write Secrets in Namespace chooses the API servers the
// operator connects to and what it sends them: grant it to the fleet's
// administrators only. The kubeconfig's credentials must be inline: one
// that names a file (a token, key, certificate or CA file), runs a command
// (exec) or calls an auth provider is refused and logged, so that a
// Secret cannot make the operator read its own files, such as its
// ServiceAccount token, or run programs.
type KubeconfigSecrets struct {
	// Config reaches the hub. Required.
	Config *rest.Config
	// Namespace holds the Secrets. Required.
	Namespace string
	// Selector picks the Secrets. Defaults to every Secret in Namespace.
	Selector labels.Selector
	// Key is the data key of the kubeconfig. Defaults to "kubeconfig".
	Key string
	// Logger logs refused kubeconfigs and the provider's cache. Defaults
	// to logr.Discard().
	Logger logr.Logger
}

var _ Provider = KubeconfigSecrets{}

// Run engages the members the Secrets describe until ctx ends.
func (p KubeconfigSecrets) Run(ctx context.Context, e Engager) error {
	if p.Config == nil || p.Namespace == "" {
		return errors.New("run the KubeconfigSecrets fleet provider: Config and Namespace are required")
	}
	key := p.Key
	if key == "" {
		key = "kubeconfig"
	}
	members := newMemberSet(ctx, e, p.Logger)
	defer members.stop()
	engage := func(s *corev1.Secret) {
		data := s.Data[key]
		cfg, err := memberConfig(data)
		if err != nil {
			p.Logger.Error(err, "Refused the kubeconfig of a member cluster; it stays disengaged until its Secret is fixed",
				"namespace", s.Namespace, "name", s.Name, "key", key)
			members.disengage(s.Name)
			return
		}
		members.engage(Member{Name: s.Name, Config: cfg}, data)
	}
	return watchHub[*corev1.Secret](ctx, p.Config, p.Logger, nil,
		cache.TypeOptions{Namespaces: []string{p.Namespace}, LabelSelector: p.Selector},
		engage, func(s *corev1.Secret) { members.disengage(s.Name) })
}

// watchHub caches the objects of type T opts selects on the hub and hands
// each added or changed one to set and each deleted one to unset, on one
// goroutine, until ctx ends. A nil scheme is client-go's.
func watchHub[T cache.Object](ctx context.Context, cfg *rest.Config, log logr.Logger, scheme *runtime.Scheme, opts cache.TypeOptions, set, unset func(T)) error {
	hub, err := cache.New(cfg, cache.Options{Logger: log, Scheme: scheme})
	if err != nil {
		return fmt.Errorf("make the hub's cache: %w", err)
	}
	l, err := cache.Register[T](hub, opts)
	if err != nil {
		return fmt.Errorf("register %T in the hub's cache: %w", *new(T), err)
	}
	_, err = l.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { set(obj.(T)) },
		UpdateFunc: func(_, obj any) { set(obj.(T)) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if o, ok := obj.(T); ok {
				unset(o)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("watch %T on the hub: %w", *new(T), err)
	}
	if err := hub.Start(ctx); err != nil {
		return fmt.Errorf("start the hub's cache: %w", err)
	}
	<-ctx.Done()
	return nil
}

// memberSet is the members a provider engaged, each with the cancel of
// its context and what it was engaged from (so that an unchanged source
// does not engage it again).
type memberSet struct {
	ctx context.Context // the provider's Run's: each member's parent
	e   Engager
	log logr.Logger

	mu      sync.Mutex
	members map[string]engaged
}

type engaged struct {
	cancel context.CancelFunc
	from   []byte
}

func newMemberSet(ctx context.Context, e Engager, log logr.Logger) *memberSet {
	return &memberSet{ctx: ctx, e: e, log: log, members: map[string]engaged{}}
}

// engage engages m unless it is engaged from the same from already (nil
// from: engaged once, whatever changes).
func (s *memberSet) engage(m Member, from []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.members[m.Name]; ok {
		if bytes.Equal(old.from, from) {
			return
		}
		old.cancel()
		delete(s.members, m.Name)
	}
	ctx, cancel := context.WithCancel(s.ctx)
	if err := s.e.Engage(ctx, m); err != nil {
		cancel()
		s.log.Error(err, "Cannot engage the member cluster", "cluster", m.Name)
		return
	}
	s.members[m.Name] = engaged{cancel: cancel, from: bytes.Clone(from)}
}

func (s *memberSet) disengage(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.members[name]; ok {
		m.cancel()
		delete(s.members, name)
	}
}

func (s *memberSet) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, m := range s.members {
		m.cancel()
		delete(s.members, name)
	}
}
