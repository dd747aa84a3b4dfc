package sharding

import (
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apisharding "k8s.io/apimachinery/pkg/sharding"
)

// MaxSelectorLength is the longest selector Selector returns: the API
// server's limit on a shard selector is 100,000 characters. With MaxSlots
// slots the worst case (every other slot, ByNamespace) is 43,516 characters.
const MaxSelectorLength = 100_000

// hashSpaceEnd is the exclusive end of the hash space, 2^64, as a shard
// range writes it.
const hashSpaceEnd = "0x10000000000000000"

var (
	// ErrNoSlots is wrapped by Selector's error for an empty set of
	// slots. No selector selects nothing: a replica that holds no slot
	// must not start (or must stop) its informers, rather than list
	// everything.
	ErrNoSlots = errors.New("no slots to select")
	// ErrKeyNotSelectable is wrapped by Selector's error for a key the API
	// server cannot filter on (ByControllerOwner): watch without a shard
	// selector and check SlotOf before dispatch.
	ErrKeyNotSelectable = errors.New("key has no server-side shard selector")
	// ErrSelectorTooLong is wrapped by Selector's error for a selector
	// longer than MaxSelectorLength.
	ErrSelectorTooLong = errors.New("shard selector too long")
)

// Selector returns the server-side shard selector (ListOptions.ShardSelector)
// that selects exactly the objects whose slot under key is in slots: one
// shardRange per run of adjacent slots, joined by " || ", in slot order.
// slots may come in any order; a slot outside 0..Count()-1 or named twice is
// an error wrapping ErrInvalidSlots, an empty set one wrapping ErrNoSlots,
// ByControllerOwner one wrapping ErrKeyNotSelectable. Everything is checked
// here because the API server answers a malformed selector on a watch with
// HTTP 500, which an informer retries forever.
//
// Holding every slot gives the single range of the whole space,
// shardRange(field, '0x0000000000000000', '0x10000000000000000'), which
// selects every object; a caller holding every slot may set no selector.
func (s Slots) Selector(key Key, slots []int) (string, error) {
	return s.selector(key, slots, MaxSelectorLength)
}

func (s Slots) selector(key Key, slots []int, limit int) (string, error) {
	field, ok := key.field()
	if !ok {
		return "", fmt.Errorf("render shard selector: %w: %v; watch unfiltered and check SlotOf before dispatch", ErrKeyNotSelectable, key)
	}
	runs, err := s.runs(slots)
	if err != nil {
		return "", fmt.Errorf("render shard selector: %w", err)
	}
	reqs := make([]apisharding.ShardRangeRequirement, len(runs))
	for i, r := range runs {
		start, end, top := s.bounds(r[0], r[1])
		reqs[i] = apisharding.ShardRangeRequirement{Key: field, Start: fmt.Sprintf("0x%016x", start), End: hashSpaceEnd}
		if !top {
			reqs[i].End = fmt.Sprintf("0x%016x", end)
		}
	}
	// apimachinery's Selector writes the wire format the API server parses.
	sel := apisharding.NewSelector(reqs...).String()
	if len(sel) > limit {
		return "", fmt.Errorf("render shard selector: %w: %d ranges make %d characters, more than %d; use fewer slots",
			ErrSelectorTooLong, len(runs), len(sel), limit)
	}
	return sel, nil
}

// runs validates slots and returns them as sorted runs of adjacent slots,
// each [first, last].
func (s Slots) runs(slots []int) ([][2]int, error) {
	if len(slots) == 0 {
		return nil, fmt.Errorf("%w: a replica holding no slot must not watch", ErrNoSlots)
	}
	sorted := slices.Sorted(slices.Values(slots))
	var runs [][2]int
	for i, slot := range sorted {
		switch {
		case slot < 0 || slot >= s.Count():
			return nil, fmt.Errorf("%w: slot %d is outside 0..%d", ErrInvalidSlots, slot, s.Count()-1)
		case i > 0 && slot == sorted[i-1]:
			return nil, fmt.Errorf("%w: slot %d named twice", ErrInvalidSlots, slot)
		case i > 0 && slot == sorted[i-1]+1:
			runs[len(runs)-1][1] = slot
		default:
			runs = append(runs, [2]int{slot, slot})
		}
	}
	return runs, nil
}

// TweakListOptions returns a list-options tweak that sets selector as the
// shard selector of every list and watch, for the tweak argument of
// client-go's informer constructors (informers.WithTweakListOptions, the
// filtered dynamic and metadata informers). selector should come from
// Selector; the tweak keeps every other option, label selectors included,
// which the API server combines with it. Use it only where Supported says
// true: an API server without the feature ignores the selector silently
// and sends every object.
func TweakListOptions(selector string) func(*metav1.ListOptions) {
	return func(o *metav1.ListOptions) { o.ShardSelector = selector }
}
