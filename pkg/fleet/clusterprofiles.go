package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	inventoryv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/cluster-inventory-api/pkg/access"

	"github.com/opkit-dev/opkit/pkg/cache"
)

// ClusterProfiles is a Provider of the members a cluster inventory lists:
// the ClusterProfile objects of sigs.k8s.io/cluster-inventory-api (the
// SIG-Multicluster inventory, multicluster.x-k8s.io/v1alpha1) in Namespace
// of the hub whose labels match Selector. Each is a member named after the
// profile, reached as Access says: the profile's status names the access
// providers it supports and their cluster (server, CA, the credential
// plugin's extensions); Access holds the operator's own configuration of
// those providers, the credential plugins it runs (cluster-inventory-api's
// pkg/access, the same file format as its other consumers read).
//
// A profile added, or whose chosen access provider's cluster changed,
// engages its member anew; one deleted, or that no provider of Access
// serves, disengages it. A change elsewhere in the profile (its
// conditions, properties, version) engages nothing again. The profile's
// ControlPlaneHealthy condition does not decide engagement: the fleet's
// own probes report whether a member answers (Cluster.Health).
//
// Whoever can write ClusterProfiles' status in Namespace (the cluster
// manager) chooses the API servers the operator connects to, and what the
// credential plugins are asked for: the plugin is told the cluster the
// profile's extension names, and the token it returns is sent to the
// profile's server. Grant that write to the cluster manager only, as the
// inventory's design assumes.
type ClusterProfiles struct {
	// Config reaches the hub. Required.
	Config *rest.Config
	// Namespace holds the ClusterProfiles. Required.
	Namespace string
	// Selector picks the profiles, for example a cluster set's
	// (multicluster.x-k8s.io/clusterset=NAME). Defaults to every profile
	// in Namespace.
	Selector labels.Selector
	// Access is the operator's configuration of access providers, for
	// example access.NewFromFile of the file its other consumers read.
	// Its providers are tried in order; the first one the profile's status
	// also names reaches the member. Required.
	Access *access.Config
	// Logger logs profiles that cannot be reached and the provider's
	// cache. Defaults to logr.Discard().
	Logger logr.Logger
}

var _ Provider = ClusterProfiles{}

// Run engages the members the profiles describe until ctx ends.
func (p ClusterProfiles) Run(ctx context.Context, e Engager) error {
	if p.Config == nil || p.Namespace == "" || p.Access == nil {
		return errors.New("run the ClusterProfiles fleet provider: Config, Namespace and Access are required")
	}
	if len(p.Access.Providers) == 0 {
		return errors.New("run the ClusterProfiles fleet provider: Access names no access provider; give it the providers (name and execConfig) the profiles' status.accessProviders name")
	}
	scheme := runtime.NewScheme()
	if err := inventoryv1alpha1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("run the ClusterProfiles fleet provider: %w", err)
	}
	members := newMemberSet(ctx, e, p.Logger)
	defer members.stop()
	engage := func(cp *inventoryv1alpha1.ClusterProfile) {
		cfg, from, err := p.memberConfig(cp)
		if err != nil {
			p.Logger.Error(err, "Cannot reach the member cluster a ClusterProfile lists; it stays disengaged until the profile or the access configuration changes",
				"namespace", cp.Namespace, "name", cp.Name)
			members.disengage(cp.Name)
			return
		}
		members.engage(Member{Name: cp.Name, Config: cfg}, from)
	}
	return watchHub[*inventoryv1alpha1.ClusterProfile](ctx, p.Config, p.Logger, scheme,
		cache.TypeOptions{Namespaces: []string{p.Namespace}, LabelSelector: p.Selector},
		engage, func(cp *inventoryv1alpha1.ClusterProfile) { members.disengage(cp.Name) })
}

// memberConfig builds the config of cp's member with p.Access, and returns
// with it what the config was built from: the access provider chosen and
// its cluster, so that a change elsewhere in the profile engages nothing
// again.
func (p ClusterProfiles) memberConfig(cp *inventoryv1alpha1.ClusterProfile) (*rest.Config, []byte, error) {
	if cp.Name == "" {
		return nil, nil, errors.New("the ClusterProfile has no name")
	}
	chosen, ok := chosenProvider(p.Access, cp)
	if !ok {
		offered := make([]string, 0, len(cp.Status.AccessProviders)+len(cp.Status.CredentialProviders))
		for _, ap := range cp.Status.AccessProviders {
			offered = append(offered, ap.Name)
		}
		for _, ap := range cp.Status.CredentialProviders {
			offered = append(offered, ap.Name)
		}
		configured := make([]string, 0, len(p.Access.Providers))
		for _, ap := range p.Access.Providers {
			configured = append(configured, ap.Name)
		}
		return nil, nil, fmt.Errorf("ClusterProfile %s/%s offers the access providers %q, none of which the operator's access configuration (%q) names: add one of them, with its credential plugin, to the configuration",
			cp.Namespace, cp.Name, offered, configured)
	}
	if chosen.Cluster.Server == "" {
		return nil, nil, fmt.Errorf("ClusterProfile %s/%s: access provider %q names no server", cp.Namespace, cp.Name, chosen.Name)
	}
	cfg, err := p.Access.BuildConfigFromCP(cp)
	if err != nil {
		return nil, nil, fmt.Errorf("ClusterProfile %s/%s: %w", cp.Namespace, cp.Name, err)
	}
	from, err := json.Marshal(chosen)
	if err != nil {
		return nil, nil, fmt.Errorf("ClusterProfile %s/%s: %w", cp.Namespace, cp.Name, err)
	}
	return cfg, from, nil
}

// chosenProvider is the access provider of cp that BuildConfigFromCP uses:
// the first of a's providers that cp's status names, a name in
// status.accessProviders winning over the same in the deprecated
// status.credentialProviders.
func chosenProvider(a *access.Config, cp *inventoryv1alpha1.ClusterProfile) (inventoryv1alpha1.AccessProvider, bool) {
	offered := map[string]inventoryv1alpha1.AccessProvider{}
	for _, ap := range cp.Status.CredentialProviders {
		offered[ap.Name] = ap
	}
	for _, ap := range cp.Status.AccessProviders {
		offered[ap.Name] = ap
	}
	for _, want := range a.Providers {
		if ap, ok := offered[want.Name]; ok {
			return ap, true
		}
	}
	return inventoryv1alpha1.AccessProvider{}, false
}
