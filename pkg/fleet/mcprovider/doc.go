// Package mcprovider runs the cluster providers written for
// sigs.k8s.io/multicluster-runtime (kcp's, Gardener's, Cluster API's, its
// own kubeconfig and clusters providers) as the providers of an opkit
// fleet, unchanged.
//
// Its contract:
//
//   - Each cluster a multicluster-runtime provider engages is engaged as a
//     fleet member of the same name, reached with the cluster's REST config,
//     until the context it was engaged with ends.
//   - Engaging the same cluster (the same cluster.Cluster) again is a no-op,
//     as multicluster-runtime's Aware asks; another cluster of the same name
//     replaces the member.
//   - The fleet builds each member's cache and client itself: what the
//     provider's cluster.Cluster caches, if the provider starts it, is the
//     provider's own, and costs its own memory.
package mcprovider
