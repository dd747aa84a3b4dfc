package cache

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	restwatch "k8s.io/client-go/rest/watch"
)

// metadataWithEverything is metadata with every field ObjectMeta has set.
func metadataWithEverything() *metav1.PartialObjectMetadata {
	now := metav1.NewTime(time.Unix(1700000000, 0))
	later := metav1.NewTime(time.Unix(1700000100, 0))
	grace := int64(30)
	yes := true
	return &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "a", GenerateName: "a-", Namespace: "ns", UID: "uid-1", ResourceVersion: "42", Generation: 3,
			CreationTimestamp: now, DeletionTimestamp: &later, DeletionGracePeriodSeconds: &grace,
			Labels: map[string]string{"app": "shop", "tier": "api"},
			Annotations: map[string]string{
				lastAppliedAnnotation: `{"apiVersion":"v1","kind":"ConfigMap","data":{"k":"v"}}`,
				"team":                "blue",
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "uid-0", Controller: &yes}},
			Finalizers:      []string{"example.com/f"},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &now,
					FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:data":{"f:k":{}}}`)},
				{Manager: "helm", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1", Time: &later,
					FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{}}`), Subresource: "status"},
			},
		},
	}
}

func protobufInfo(t *testing.T, ns runtime.NegotiatedSerializer) runtime.SerializerInfo {
	t.Helper()
	for _, info := range ns.SupportedMediaTypes() {
		if info.MediaType == runtime.ContentTypeProtobuf {
			return info
		}
	}
	t.Fatal("no protobuf serializer")
	return runtime.SerializerInfo{}
}

// The stripped decoding gives what client-go's decoding and the cache's
// stripping give, whatever is stripped.
func TestMetaDecoderStripsAsTheTransform(t *testing.T) {
	base := metainternalversionscheme.Codecs.WithoutConversion()
	var encoded bytes.Buffer
	if err := protobufInfo(t, base).Serializer.Encode(metadataWithEverything(), &encoded); err != nil {
		t.Fatal(err)
	}
	for _, strip := range []stripping{{}, {managedFields: true}, {lastApplied: true}, {managedFields: true, lastApplied: true}} {
		want := metadataWithEverything()
		if strip.managedFields {
			for i := range want.ManagedFields {
				want.ManagedFields[i].FieldsV1 = nil
			}
		}
		if strip.lastApplied {
			delete(want.Annotations, lastAppliedAnnotation)
		}
		d := protobufInfo(t, metaSerializer{NegotiatedSerializer: base, strip: strip}).Serializer
		for range 2 { // the scratch buffer is reused
			got, _, err := d.Decode(encoded.Bytes(), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%+v: decoded (-want +got):\n%s", strip, diff)
			}
		}
	}
}

// Anything but PartialObjectMetadata decodes as client-go decodes it.
func TestMetaDecoderPassesOtherObjects(t *testing.T) {
	base := metainternalversionscheme.Codecs.WithoutConversion()
	status := &metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusFailure, Message: "gone", Reason: metav1.StatusReasonExpired, Code: 410}
	var encoded bytes.Buffer
	if err := protobufInfo(t, base).Serializer.Encode(status, &encoded); err != nil {
		t.Fatal(err)
	}
	d := protobufInfo(t, metaSerializer{NegotiatedSerializer: base, strip: stripping{managedFields: true, lastApplied: true}}).Serializer
	got, _, err := d.Decode(encoded.Bytes(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(status, got); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}
	if _, _, err := d.Decode([]byte("k8s\x00garbage"), nil, nil); err == nil {
		t.Error("garbage decoded without an error")
	}
}

// A stream of watch events decodes to the events client-go's decoders
// give, stripped, each object whole although the next frame reuses the
// buffer it was read from.
func TestMetaWatchStream(t *testing.T) {
	base := metainternalversionscheme.Codecs.WithoutConversion()
	info := protobufInfo(t, base)
	var objects []*metav1.PartialObjectMetadata
	var stream bytes.Buffer
	framer := info.StreamSerializer.Framer.NewFrameWriter(&stream)
	for i, name := range []string{"a", "bb", "ccc"} {
		obj := metadataWithEverything()
		obj.Name, obj.UID = name, types.UID("uid-"+name)
		objects = append(objects, obj)
		var raw bytes.Buffer
		if err := info.Serializer.Encode(obj, &raw); err != nil {
			t.Fatal(err)
		}
		e := &metav1.WatchEvent{Type: string([]watch.EventType{watch.Added, watch.Modified, watch.Bookmark}[i]), Object: runtime.RawExtension{Raw: raw.Bytes()}}
		if err := info.StreamSerializer.Encode(e, framer); err != nil {
			t.Fatal(err)
		}
	}
	ms := metaSerializer{NegotiatedSerializer: base, strip: stripping{managedFields: true, lastApplied: true}}
	mine := protobufInfo(t, ms)
	frames := mine.StreamSerializer.Framer.NewFrameReader(readCloser{&stream})
	dec := restwatch.NewDecoder(streaming.NewDecoder(frames, mine.StreamSerializer.Serializer), ms.DecoderToVersion(mine.Serializer, nil))
	var got []*metav1.PartialObjectMetadata
	var kinds []watch.EventType
	for range objects {
		typ, obj, err := dec.Decode()
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, typ)
		got = append(got, obj.(*metav1.PartialObjectMetadata))
	}
	for _, want := range objects {
		want.TypeMeta = metav1.TypeMeta{} // cleared by the decoder, as client-go's
		delete(want.Annotations, lastAppliedAnnotation)
		for i := range want.ManagedFields {
			want.ManagedFields[i].FieldsV1 = nil
		}
	}
	if diff := cmp.Diff(objects, got); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]watch.EventType{watch.Added, watch.Modified, watch.Bookmark}, kinds); diff != "" {
		t.Errorf("event types (-want +got):\n%s", diff)
	}
}

type readCloser struct{ *bytes.Buffer }

func (readCloser) Close() error { return nil }
