package mcprovider

import (
	"context"
	"fmt"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/opkit-dev/opkit/pkg/fleet"
)

// Provider returns p as a fleet Provider: the fleet's Start runs it, and
// the clusters it engages are the fleet's members.
func Provider(p multicluster.ProviderRunnable) fleet.Provider {
	return fleet.ProviderFunc(func(ctx context.Context, e fleet.Engager) error {
		if err := p.Start(ctx, Aware(e)); err != nil && ctx.Err() == nil {
			return fmt.Errorf("run multicluster-runtime provider %T: %w", p, err)
		}
		return nil
	})
}

// Aware returns the multicluster.Aware that engages clusters as members
// with e: what a multicluster-runtime provider that is not a
// ProviderRunnable (its clusters provider, say) is handed to engage with.
func Aware(e fleet.Engager) multicluster.Aware {
	return &aware{e: e, engaged: map[string]engagement{}}
}

type aware struct {
	e fleet.Engager

	mu      sync.Mutex
	engaged map[string]engagement // what each name was last engaged with
}

type engagement struct {
	cluster cluster.Cluster
	done    <-chan struct{} // the engagement's context's
}

var _ multicluster.Aware = (*aware)(nil)

func (a *aware) Engage(ctx context.Context, name string, cl cluster.Cluster) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if old, ok := a.engaged[name]; ok && old.cluster == cl {
		select {
		case <-old.done:
		default:
			return nil
		}
	}
	if err := a.e.Engage(ctx, fleet.Member{Name: name, Config: cl.GetConfig()}); err != nil {
		return fmt.Errorf("engage cluster %q as a fleet member: %w", name, err)
	}
	now := engagement{cluster: cl, done: ctx.Done()}
	a.engaged[name] = now
	context.AfterFunc(ctx, func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.engaged[name] == now {
			delete(a.engaged, name)
		}
	})
	return nil
}
