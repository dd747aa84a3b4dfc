package sharding

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
)

// probeSelector is malformed on purpose ('0x0' is not 16 hex digits): an API
// server that filters by shard selectors refuses it, one that does not
// ignores it.
const probeSelector = "shardRange(object.metadata.uid, '0x0', '0x1')"

// refusal is in the message of an API server that refuses a shard selector.
const refusal = "invalid shard selector"

// Supported reports whether the API server filters lists and watches of
// resource by shard selectors (kube-apiserver's ShardedListAndWatch feature
// gate, alpha and off by default in 1.36 and 1.37). A server without it
// ignores a selector silently and sends everything, and a list's ShardInfo
// is not echoed for custom resources, metadata-only lists or streaming
// lists, so Supported asks directly: one LIST of at most one object's
// metadata with a deliberately malformed selector, which a supporting
// server refuses ("invalid shard selector") and any other answers.
//
// It probes resource in namespace ("" for all namespaces, or for a
// cluster-scoped resource), so the caller needs RBAC "list" on exactly what
// it names and nothing more: probe the resource the informer will watch (a
// resource served by an aggregated API server may differ from the rest), or
// the coordination.k8s.io Leases of the operator's own namespace, which a
// sharded operator lists anyway. Any error other than the refusal, such as
// Forbidden or NotFound, is returned wrapped, naming the resource and
// namespace; apierrors.IsForbidden and friends see through it.
func Supported(ctx context.Context, client metadata.Interface, resource schema.GroupVersionResource, namespace string) (bool, error) {
	opts := metav1.ListOptions{Limit: 1, ShardSelector: probeSelector}
	_, err := client.Resource(resource).Namespace(namespace).List(ctx, opts)
	if err == nil {
		return false, nil
	}
	// kube-apiserver 1.37 refuses with HTTP 500 and no reason, so the
	// message is all there is to tell the refusal from a failure.
	var status apierrors.APIStatus
	if errors.As(err, &status) && strings.Contains(status.Status().Message, refusal) {
		return true, nil
	}
	where := "all namespaces"
	if namespace != "" {
		where = "namespace " + namespace
	}
	return false, fmt.Errorf("probe shard selector support: list %s (%s) in %s, which needs RBAC list on it: %w",
		resource.GroupResource(), resource.Version, where, err)
}
