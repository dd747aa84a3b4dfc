package informer

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// randomMeta returns a metadata object with fields of every kind set at
// random, often to forms that cannot pack: nil against empty maps and
// slices, uids that are no lowercase UUID, resourceVersions that are no
// plain integer, times in other zones or with nanoseconds, owner
// references with nil and set bools, managed fields.
func randomMeta(rnd *rand.Rand) *metav1.PartialObjectMetadata {
	pick := func(n int) int { return rnd.IntN(n) }
	m := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}}
	if pick(10) == 0 {
		m.TypeMeta = [](metav1.TypeMeta){{}, {APIVersion: "v1", Kind: "Secret"}}[pick(2)]
	}
	m.Namespace = []string{"", "ns"}[pick(2)]
	m.Name = fmt.Sprint("obj-", pick(100))
	m.UID = []types.UID{"", "6f1c2a3e-0b4d-4c5e-9f60-000000000042", "6F1C2A3E-0B4D-4C5E-9F60-000000000042",
		"00000000-0000-0000-0000-000000000000", "not-a-uuid", "6f1c2a3e-0b4d-4c5e-9f60-00000000004",
		"6f1c2a3e+0b4d-4c5e-9f60-000000000042", "6f1c2a3e-0b4d-4c5e-9f60-00000000004g"}[pick(8)]
	m.ResourceVersion = []string{"", "0", "1", "123456", "0123", "18446744073709551615", "18446744073709551614",
		"99999999999999999999", "-1", "abc"}[pick(10)]
	m.Generation = int64(pick(3))
	sec := int64(1700000000 + pick(1000))
	m.CreationTimestamp = []metav1.Time{{}, metav1.Unix(sec, 0), {Time: time.Unix(sec, 0).UTC()},
		metav1.Unix(sec, 5), {Time: time.Now()}, metav1.Unix(0, 0), {Time: time.Unix(sec, 0).In(time.FixedZone("x", 3600))}}[pick(7)]
	m.Labels = randomMap(rnd)
	m.Annotations = randomMap(rnd)
	m.GenerateName = []string{"", "obj-"}[pick(2)]
	switch pick(4) {
	case 1:
		m.OwnerReferences = []metav1.OwnerReference{}
	case 2, 3:
		yes, no := true, false
		bools := []*bool{nil, &yes, &no}
		m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "d", UID: "u",
			Controller: bools[pick(3)], BlockOwnerDeletion: bools[pick(3)]}}
	}
	m.Finalizers = [][]string{nil, {}, {"a", "b"}}[pick(3)]
	if pick(4) == 0 {
		d := metav1.Unix(sec+10, 0)
		m.DeletionTimestamp = &d
	}
	if pick(4) == 0 {
		g := int64(pick(30))
		m.DeletionGracePeriodSeconds = &g
	}
	if pick(8) == 0 {
		m.SelfLink = "/api/v1/x" //lint:ignore SA1019 an object with one must not pack
	}
	m.ManagedFields = [][]metav1.ManagedFieldsEntry{nil, nil, nil, {}, {{Manager: "kubectl"}}}[pick(5)]
	return m
}

func randomMap(rnd *rand.Rand) map[string]string {
	switch rnd.IntN(3) {
	case 0:
		return nil
	case 1:
		return map[string]string{}
	}
	return map[string]string{"app": fmt.Sprint(rnd.IntN(3))}
}

// Every object a packer is given comes back DeepEqual from its packed
// form, or is held as it is; objects as the API server's are decoded
// always pack.
func TestPackRoundTrips(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, 2))
			var p packer
			p.pack(&metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}})
			packed := 0
			for range 4000 {
				m := randomMeta(rnd)
				want := m.DeepCopy()
				v := p.pack(m)
				if _, ok := v.(*packedMeta); !ok {
					if v != any(m) {
						t.Fatalf("pack returned %T, neither packed nor the object", v)
					}
					continue
				}
				packed++
				got := p.unpack(m.Namespace, m.Name, v)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("packed and unpacked:\n got %#v\nwant %#v", got, want)
				}
				if got == any(m) {
					t.Fatal("unpack returned the object packed, not a new one")
				}
			}
			if packed < 50 {
				t.Fatalf("%d objects of 4000 packed: the test covers too little", packed)
			}
		})
	}
}

// Objects decoded as client-go decodes the API server's JSON and
// protobuf pack, with their managed fields stripped as the cache strips
// them.
func TestDecodedObjectsPack(t *testing.T) {
	yes := true
	grace := int64(30)
	del := metav1.Unix(1700000100, 0)
	src := &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "cm", Namespace: "ns", GenerateName: "c", UID: "6f1c2a3e-0b4d-4c5e-9f60-000000000042",
			ResourceVersion: "4711", Generation: 3, CreationTimestamp: metav1.Unix(1700000000, 0),
			DeletionTimestamp: &del, DeletionGracePeriodSeconds: &grace,
			Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "K", Name: "o", UID: "u", Controller: &yes}},
			Finalizers:      []string{"f"},
		},
	}
	j, err := json.Marshal(src)
	if err != nil {
		t.Fatal(err)
	}
	fromJSON := &metav1.PartialObjectMetadata{}
	if err := json.Unmarshal(j, fromJSON); err != nil {
		t.Fatal(err)
	}
	pb, err := src.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	fromProto := &metav1.PartialObjectMetadata{}
	if err := fromProto.Unmarshal(pb); err != nil {
		t.Fatal(err)
	}
	fromProto.TypeMeta = src.TypeMeta // protobuf carries it in the envelope
	for name, m := range map[string]*metav1.PartialObjectMetadata{"json": fromJSON, "protobuf": fromProto} {
		var p packer
		v := p.pack(m)
		if _, ok := v.(*packedMeta); !ok {
			t.Errorf("%s: not packed: %#v", name, m)
			continue
		}
		if got := p.unpack("ns", "cm", v); !reflect.DeepEqual(got, m) {
			t.Errorf("%s: packed and unpacked:\n got %#v\nwant %#v", name, got, m)
		}
	}
}

// An object read by a key the caller builds in a buffer it reuses, as the
// cache's Lister.Get does, owns its namespace and name: they do not
// change when the buffer does.
func TestPackedReadOwnsItsKey(t *testing.T) {
	s := newStore(nil)
	s.packer = &packer{}
	m := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "settings", UID: "0f8e3b1c-6a3e-4c3e-9d0e-2b8f7a6c5d4e", ResourceVersion: "7"}}
	if err := s.Add(m); err != nil {
		t.Fatal(err)
	}
	buf := []byte("team-a/settings")
	got, ok, err := s.GetByKey(unsafe.String(unsafe.SliceData(buf), len(buf)))
	if err != nil || !ok {
		t.Fatalf("GetByKey = %v, %v, %v", got, ok, err)
	}
	copy(buf, "xxxxxxxxxxxxxxx")
	if o := got.(*metav1.PartialObjectMetadata); o.Namespace != "team-a" || o.Name != "settings" {
		t.Errorf("after the caller reused its key's buffer, the object read is %s/%s, want team-a/settings", o.Namespace, o.Name)
	}
}
