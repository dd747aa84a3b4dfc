package sharding

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apisharding "k8s.io/apimachinery/pkg/sharding"
)

// MaxSlots is the largest slot count NewSlots accepts: enough for far more
// replicas than one API server feeds, and small enough that any set of
// slots renders as a selector well under the API server's length limit.
const MaxSlots = 1024

// ErrInvalidSlots is wrapped by the errors of NewSlots for a count that is
// not a power of two from 1 to MaxSlots, and of Selector for a slot outside
// 0..Count()-1 or named twice.
var ErrInvalidSlots = errors.New("invalid slots")

// Slots divides the 64-bit hash space into Count() equal slots; slot i is
// the hashes whose top log2(Count()) bits are i. The zero value is one slot
// that holds every key. Slots is a small value, safe to copy and to use
// concurrently.
type Slots struct {
	// bits is log2 of the slot count, 0..10.
	bits uint
}

// NewSlots returns count slots. count must be a power of two from 1 to
// MaxSlots, so that each slot is exactly one shardRange; the error says
// which counts are valid.
func NewSlots(count int) (Slots, error) {
	if count < 1 || count > MaxSlots || count&(count-1) != 0 {
		return Slots{}, fmt.Errorf("%w: count %d: use a power of two from 1 to %d (1, 2, 4, ..., %d)",
			ErrInvalidSlots, count, MaxSlots, MaxSlots)
	}
	return Slots{bits: uint(bits.TrailingZeros(uint(count)))}, nil
}

// Count returns the number of slots.
func (s Slots) Count() int { return 1 << s.bits }

// OfValue returns the slot of a key's value (a UID or a namespace name):
// the top bits of its 64-bit FNV-1a hash, computed by apimachinery's
// sharding.HashField, the function the API server filters with.
func (s Slots) OfValue(value string) int {
	h, err := strconv.ParseUint(apisharding.HashField(value), 16, 64)
	if err != nil {
		// HashField always returns 16 hex digits.
		panic(fmt.Sprintf("sharding: parse hash %q: %v", apisharding.HashField(value), err))
	}
	return s.ofHash(h)
}

func (s Slots) ofHash(h uint64) int {
	if s.bits == 0 {
		return 0
	}
	return int(h >> (64 - s.bits))
}

// SlotOf returns the slot obj belongs to under key: the slot of
// key.Value(obj).
func (s Slots) SlotOf(key Key, obj metav1.Object) int {
	return s.OfValue(key.Value(obj))
}

// bounds returns the half-open hash range [start, end) of the slots first
// to last; top is true when end is 2^64, which a uint64 cannot hold.
func (s Slots) bounds(first, last int) (start, end uint64, top bool) {
	shift := 64 - s.bits
	start = uint64(first) << shift
	if last+1 == s.Count() {
		return start, 0, true
	}
	return start, uint64(last+1) << shift, false
}
