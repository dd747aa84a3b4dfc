package sharding

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestNewSlots(t *testing.T) {
	for count := 1; count <= MaxSlots; count *= 2 {
		s, err := NewSlots(count)
		if err != nil || s.Count() != count {
			t.Errorf("NewSlots(%d) = %d slots, %v", count, s.Count(), err)
		}
	}
	for _, count := range []int{0, -4, 3, 12, 2 * MaxSlots} {
		_, err := NewSlots(count)
		if !errors.Is(err, ErrInvalidSlots) || !strings.Contains(err.Error(), "power of two from 1 to 1024") {
			t.Errorf("NewSlots(%d) err = %v, want ErrInvalidSlots saying which counts are valid", count, err)
		}
	}
	if got := (Slots{}).Count(); got != 1 {
		t.Errorf("zero Slots has %d slots, want 1", got)
	}
}

func TestSelector(t *testing.T) {
	tests := []struct {
		name  string
		count int
		key   Key
		slots []int
		want  string
	}{
		{"one slot of one", 1, ByUID, []int{0},
			"shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')"},
		{"middle slot", 4, ByUID, []int{2},
			"shardRange(object.metadata.uid, '0x8000000000000000', '0xc000000000000000')"},
		{"top slot", 4, ByUID, []int{3},
			"shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')"},
		{"adjacent slots merge, in any order", 4, ByUID, []int{3, 0, 1},
			"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')"},
		{"every slot is one range", 8, ByUID, []int{7, 6, 5, 4, 3, 2, 1, 0},
			"shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')"},
		{"by namespace", 1024, ByNamespace, []int{1},
			"shardRange(object.metadata.namespace, '0x0040000000000000', '0x0080000000000000')"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewSlots(tt.count)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Selector(tt.key, tt.slots)
			if err != nil || got != tt.want {
				t.Errorf("Selector(%v, %v) =\n%q, %v\nwant\n%q", tt.key, tt.slots, got, err, tt.want)
			}
		})
	}
}

func TestSelectorRejects(t *testing.T) {
	s, _ := NewSlots(4)
	tests := []struct {
		name    string
		key     Key
		slots   []int
		want    error
		message string
	}{
		{"no slots", ByUID, nil, ErrNoSlots, "no slot must not watch"},
		{"slot too big", ByUID, []int{0, 4}, ErrInvalidSlots, "slot 4 is outside 0..3"},
		{"negative slot", ByUID, []int{-1}, ErrInvalidSlots, "slot -1 is outside 0..3"},
		{"slot twice", ByUID, []int{2, 1, 2}, ErrInvalidSlots, "slot 2 named twice"},
		{"owner key", ByControllerOwner, []int{0}, ErrKeyNotSelectable, "ByControllerOwner; watch unfiltered"},
		{"unknown key", Key(7), []int{0}, ErrKeyNotSelectable, "Key(7)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Selector(tt.key, tt.slots)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.message) || got != "" {
				t.Errorf("Selector(%v, %v) = %q, %v; want an error wrapping %v saying %q", tt.key, tt.slots, got, err, tt.want, tt.message)
			}
		})
	}
}

// The longest selector MaxSlots allows (every other slot: no two adjacent)
// fits; a limit it exceeds is an error, not a selector the server refuses.
func TestSelectorLength(t *testing.T) {
	s, _ := NewSlots(MaxSlots)
	var even []int
	for slot := 0; slot < MaxSlots; slot += 2 {
		even = append(even, slot)
	}
	worst, err := s.Selector(ByNamespace, even)
	if err != nil {
		t.Fatal(err)
	}
	if len(worst) != 43_516 { // MaxSelectorLength's doc says so
		t.Errorf("worst-case selector is %d characters, want 43,516", len(worst))
	}
	if n := strings.Count(worst, "shardRange("); n != MaxSlots/2 {
		t.Errorf("every other slot gives %d ranges, want %d", n, MaxSlots/2)
	}
	_, err = s.selector(ByNamespace, even, len(worst)-1)
	if !errors.Is(err, ErrSelectorTooLong) || !strings.Contains(err.Error(), "512 ranges") {
		t.Errorf("selector over the limit: err = %v, want ErrSelectorTooLong naming 512 ranges", err)
	}
}

var rangeRE = regexp.MustCompile(`shardRange\(([a-z.]+), '(0x[0-9a-f]+)', '(0x[0-9a-f]+)'\)`)

// parse turns a rendered selector into apimachinery's selector, whose
// Matches is the filter the API server applies.
func parse(t *testing.T, sel string) apisharding.Selector {
	t.Helper()
	var reqs []apisharding.ShardRangeRequirement
	for _, m := range rangeRE.FindAllStringSubmatch(sel, -1) {
		reqs = append(reqs, apisharding.ShardRangeRequirement{Key: m[1], Start: m[2], End: m[3]})
	}
	if len(reqs) != strings.Count(sel, "shardRange(") {
		t.Fatalf("cannot parse selector %q", sel)
	}
	return apisharding.NewSelector(reqs...)
}

// A client-computed slot agrees with apimachinery's matching of the slot's
// selector, for every slot count and both keys.
func TestSlotOfAgreesWithTheServersMatch(t *testing.T) {
	var objs []*corev1.ConfigMap
	for i := range 300 {
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			UID: types.UID(fmt.Sprintf("0e7c5a6e-%04d-4d6b-9c1e-5f2a8b3c4d5e", i)), Namespace: fmt.Sprintf("ns-%d", i%37),
		}})
	}
	for count := 1; count <= 64; count *= 4 {
		s, _ := NewSlots(count)
		for _, key := range []Key{ByUID, ByNamespace} {
			for slot := range count {
				sel, err := s.Selector(key, []int{slot})
				if err != nil {
					t.Fatal(err)
				}
				server := parse(t, sel)
				for _, obj := range objs {
					matches, err := server.Matches(obj)
					if err != nil {
						t.Fatal(err)
					}
					if mine := s.SlotOf(key, obj) == slot; mine != matches {
						t.Fatalf("%d slots, %v, slot %d, object %s/%s: SlotOf says %t, the server's match %t",
							count, key, slot, obj.Namespace, obj.UID, mine, matches)
					}
				}
			}
		}
	}
}

func TestKeyValue(t *testing.T) {
	parent := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "p", UID: "parent-uid", Controller: ptr.To(true)}
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "o", UID: "other-uid"}
	tests := []struct {
		name string
		key  Key
		refs []metav1.OwnerReference
		want string
	}{
		{"by UID", ByUID, []metav1.OwnerReference{parent}, "own-uid"},
		{"by namespace", ByNamespace, []metav1.OwnerReference{parent}, "ns"},
		{"follows the controller owner", ByControllerOwner, []metav1.OwnerReference{other, parent}, "parent-uid"},
		{"no controller owner: own UID", ByControllerOwner, []metav1.OwnerReference{other}, "own-uid"},
	}
	for _, tt := range tests {
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: "own-uid", Namespace: "ns", OwnerReferences: tt.refs}}
		if got := tt.key.Value(obj); got != tt.want {
			t.Errorf("%s: %v.Value = %q, want %q", tt.name, tt.key, got, tt.want)
		}
	}
	s, _ := NewSlots(256)
	child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: "child-uid", OwnerReferences: []metav1.OwnerReference{parent}}}
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: "parent-uid"}}
	if c, p := s.SlotOf(ByControllerOwner, child), s.SlotOf(ByUID, owner); c != p {
		t.Errorf("child in slot %d, its parent (ByUID) in slot %d: want the same", c, p)
	}
}
