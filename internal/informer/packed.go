package informer

import (
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// packedMeta is a *metav1.PartialObjectMetadata as a compact store holds
// it: 64 bytes where the struct takes 288, with its uid as 16 bytes
// instead of a 36-byte string, its resourceVersion as a number and its
// creation time as seconds. Its namespace and name are its store keys. Maps,
// slices and pointers are the object's own, shared with every object
// unpacked from it, so that a reader who modifies them is still caught
// by the mutation detector.
//
// Only objects that unpack to a DeepEqual object are packed (see pack);
// the store holds any other as it is.
type packedMeta struct {
	// rv is the resourceVersion plus one, 0 for none.
	rv  uint64
	uid [16]byte // all zero for none
	// created is creationTimestamp in Unix seconds, or noTime for the
	// zero time.
	created     int64
	generation  int64
	labels      map[string]string
	annotations map[string]string
	rare        *rareMeta // nil when every field of it is zero
}

// rareMeta holds the fields most cached objects leave empty.
type rareMeta struct {
	generateName               string
	ownerReferences            []metav1.OwnerReference
	finalizers                 []string
	deletionTimestamp          *metav1.Time
	deletionGracePeriodSeconds *int64
}

// noTime is packedMeta.created for the zero time: Unix seconds that no
// metav1.Time decoded from the API server can have.
const noTime = -1 << 63

// packer packs the metadata objects of one store. typeMeta, set by the
// first object packed, is what every object it packs has: objects of
// another apiVersion or kind are held as they are.
type packer struct {
	typeMeta atomic.Pointer[metav1.TypeMeta]
}

// pack returns obj packed if it is a *metav1.PartialObjectMetadata that
// unpacks to a DeepEqual object, else obj. The fields that cannot pack
// (a selfLink, managed fields, a uid that is not a lowercase UUID, a
// resourceVersion that is not a decimal integer, a creation time not in
// whole seconds in the local zone, as the API server's are decoded) are
// rare in a cache, which strips managed fields by default.
func (p *packer) pack(obj any) any {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	//lint:ignore SA1019 an object that still has a selfLink must be read back with it
	if !ok || m.SelfLink != "" || m.ManagedFields != nil {
		return obj
	}
	tm := p.typeMeta.Load()
	if tm == nil {
		p.typeMeta.CompareAndSwap(nil, &metav1.TypeMeta{APIVersion: m.APIVersion, Kind: m.Kind})
		tm = p.typeMeta.Load()
	}
	if m.TypeMeta != *tm {
		return obj
	}
	pm := &packedMeta{generation: m.Generation, labels: m.Labels, annotations: m.Annotations}
	if pm.uid, ok = parseUID(m.UID); !ok {
		return obj
	}
	if pm.rv, ok = parseRV(m.ResourceVersion); !ok {
		return obj
	}
	if pm.created, ok = packTime(m.CreationTimestamp); !ok {
		return obj
	}
	if m.GenerateName != "" || m.OwnerReferences != nil || m.Finalizers != nil || m.DeletionTimestamp != nil || m.DeletionGracePeriodSeconds != nil {
		pm.rare = &rareMeta{m.GenerateName, m.OwnerReferences, m.Finalizers, m.DeletionTimestamp, m.DeletionGracePeriodSeconds}
	}
	return pm
}

// unpack returns the object namespace/name that v, a value the store
// holds, stands for: a new *metav1.PartialObjectMetadata for a packed one,
// else v.
func (p *packer) unpack(namespace, name string, v any) any {
	pm, ok := v.(*packedMeta)
	if !ok {
		return v
	}
	u := &unpacked{}
	m := &u.obj
	m.TypeMeta = *p.typeMeta.Load()
	m.Namespace, m.Name = namespace, name
	m.Generation, m.Labels, m.Annotations = pm.generation, pm.labels, pm.annotations
	if pm.uid != [16]byte{} {
		formatUID(u.uid[:0], pm.uid)
		m.UID = types.UID(unsafe.String(&u.uid[0], len(u.uid)))
	}
	if pm.rv != 0 {
		rv := strconv.AppendUint(u.rv[:0], pm.rv-1, 10)
		m.ResourceVersion = unsafe.String(&u.rv[0], len(rv))
	}
	if pm.created != noTime {
		m.CreationTimestamp = metav1.Time{Time: time.Unix(pm.created, 0).Local()}
	}
	if r := pm.rare; r != nil {
		m.GenerateName, m.OwnerReferences, m.Finalizers = r.generateName, r.ownerReferences, r.finalizers
		m.DeletionTimestamp, m.DeletionGracePeriodSeconds = r.deletionTimestamp, r.deletionGracePeriodSeconds
	}
	return m
}

// unpacked is an object unpacked and the bytes of its uid and
// resourceVersion strings: one allocation per read, where three separate
// ones cost twice the time. The bytes are written once, before the
// strings are made.
type unpacked struct {
	obj metav1.PartialObjectMetadata
	uid [36]byte
	rv  [20]byte // the longest uint64
}

// packTime returns t in Unix seconds, noTime for the zero time, and false
// if unpacking would not give t back: a time with nanoseconds, a
// monotonic reading or another zone than metav1's decoders give.
func packTime(t metav1.Time) (int64, bool) {
	if t.IsZero() {
		return noTime, t.Time == time.Time{}
	}
	s := t.Unix()
	return s, s != noTime && time.Unix(s, 0).Local() == t.Time
}

// parseRV returns rv plus one as a number, 0 for none, and false if rv is
// not a decimal integer spelled as strconv spells it.
func parseRV(rv string) (uint64, bool) {
	if rv == "" {
		return 0, true
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	var b [20]byte
	if err != nil || n == 1<<64-1 || string(strconv.AppendUint(b[:0], n, 10)) != rv {
		return 0, false
	}
	return n + 1, true
}

const hexDigits = "0123456789abcdef"

// parseUID returns uid's 16 bytes, all zero for none, and false if uid
// is not a UUID in lowercase (as the API server makes them) or is the nil
// UUID.
func parseUID(uid types.UID) ([16]byte, bool) {
	var b [16]byte
	if uid == "" {
		return b, true
	}
	if len(uid) != 36 {
		return b, false
	}
	j := 0
	for i := 0; i < 36; {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if uid[i] != '-' {
				return b, false
			}
			i++
			continue
		}
		hi, lo := hexValue(uid[i]), hexValue(uid[i+1])
		if hi < 0 || lo < 0 {
			return b, false
		}
		b[j] = byte(hi<<4 | lo)
		j++
		i += 2
	}
	return b, b != [16]byte{}
}

func hexValue(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c - 'a' + 10)
	}
	return -1
}

// formatUID appends b as a lowercase UUID, 36 bytes, to dst.
func formatUID(dst []byte, b [16]byte) []byte {
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hexDigits[c>>4], hexDigits[c&0xf])
	}
	return dst
}
