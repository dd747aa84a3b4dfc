// Package cachetest builds the cache's Listers from objects in memory, for
// unit tests of a reconciler without an API server.
//
// Its contract:
//
//   - The real Lister: NewLister returns a *cache.Lister[T], not a look-alike,
//     so a reconciler that holds a *cache.Lister[*corev1.ConfigMap] is tested
//     unchanged. Get, List, ByIndex, ByIndexInNamespace, ControlledBy and
//     AddIndex run the cache's own code: the same
//     sorting (namespace, then name), the same NotFound and other errors,
//     the same zero-copy reads.
//   - Changeable: New returns a *Store[T], whose Add, Update and
//     Delete change what its Lister sees at once, so that a test can check
//     how a reconciler reacts.
//   - Strict about mutation: objects are copied in, so the test's own stay
//     its own; NewLister fails the test at its end when a stored object
//     was modified in place (Store.CheckMutations), as a real cache's
//     mutation detector would.
//   - Failing on demand: Options.ReadError makes chosen reads (a Get of one
//     key, every List, …) return the error it gives, unwrapped, the way
//     controller-runtime's interceptor.Funcs do for a fake client; writes
//     go through the client, not a Lister, so inject their errors there.
//   - Differences from a cache: there is no Start, so indexes may be added
//     at any time; nothing is watched, so event handlers added to the
//     Lister are never called; an object added without a resourceVersion
//     is given the store's next one ("1", "2", …), as the API server
//     would, but no UID: set one on owners whose children ControlledBy
//     lists.
//
// pkg/cache builds the store, whose internals are the
// cache's; this package adds what only tests want: a REST mapper that knows
// the built-in kinds without an API server, and helpers that take a
// testing.TB.
package cachetest
