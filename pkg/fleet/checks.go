package fleet

import "github.com/opkit-dev/opkit/pkg/cache"

// memberMutations returns Options.Mutations for the cache of the member
// named cluster: its reports name the member.
func (f *Fleet) memberMutations(cluster string) cache.MutationOptions {
	o := f.opts.Mutations
	report := o.OnMutation
	if report == nil {
		// The cache's default.
		report = func(err *cache.MutationError) { panic(err.Error()) }
	}
	o.OnMutation = func(err *cache.MutationError) {
		err.Cluster = cluster
		report(err)
	}
	return o
}

// memberUnregisteredReads returns Options.UnregisteredReads for the cache
// of the member named cluster: its reports name the member.
func (f *Fleet) memberUnregisteredReads(cluster string) cache.UnregisteredReadOptions {
	o := f.opts.UnregisteredReads
	report := o.OnRead
	if report == nil {
		// The cache's default: a panic no recover in the reader catches.
		report = func(err *cache.UnregisteredReadError) {
			msg := err.Error()
			go panic(msg)
		}
	}
	o.OnRead = func(err *cache.UnregisteredReadError) {
		err.Cluster = cluster
		report(err)
	}
	return o
}
