package sharding

import (
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Key says which value of an object decides its slot.
type Key int

const (
	// ByUID puts each object in the slot of its own UID
	// (object.metadata.uid): objects spread evenly over the slots. The
	// zero Key.
	ByUID Key = iota
	// ByNamespace puts every object of a namespace in the slot of the
	// namespace's name (object.metadata.namespace): a replica sees a
	// namespace whole. Cluster-scoped objects all land in the slot of "".
	ByNamespace
	// ByControllerOwner puts a child object in the slot of its controller
	// owner's UID, which is the slot its parent has under ByUID: the child
	// lands with its parent, so the replica that reconciles the parent
	// also sees its children. A child without a controller owner falls
	// back to its own UID. The API server cannot filter on an owner, so
	// Selector refuses this key (ErrKeyNotSelectable): watch such children
	// unfiltered and check SlotOf before dispatch. Children of parents
	// sharded ByNamespace need no such key: owner references never cross
	// namespaces, so ByNamespace already lands them with their parent.
	ByControllerOwner
)

// String returns the key's name as Go code spells it.
func (k Key) String() string {
	switch k {
	case ByUID:
		return "ByUID"
	case ByNamespace:
		return "ByNamespace"
	case ByControllerOwner:
		return "ByControllerOwner"
	}
	return "Key(" + strconv.Itoa(int(k)) + ")"
}

// Value returns the value of obj that decides its slot under k. An unknown
// Key behaves as ByUID.
func (k Key) Value(obj metav1.Object) string {
	switch k {
	case ByNamespace:
		return obj.GetNamespace()
	case ByControllerOwner:
		if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
			return string(ref.UID)
		}
	}
	return string(obj.GetUID())
}

// field returns the shard selector's field path for k; false for a key the
// API server cannot select on.
func (k Key) field() (string, bool) {
	switch k {
	case ByUID:
		return "object.metadata.uid", true
	case ByNamespace:
		return "object.metadata.namespace", true
	}
	return "", false
}
