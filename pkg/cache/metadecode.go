package cache

import (
	"slices"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// metaSerializer is the metadata client's serializer with a shorter way
// through the protobuf watch events of PartialObjectMetadata, the bulk of
// a metadata informer's streaming list. client-go copies each event's
// bytes twice (the event's object, then the object's envelope) before it
// decodes them, and decodes what the cache then strips: managedFields'
// fieldsV1, usually most of an object's metadata, and the last-applied
// annotation, often larger than all the rest. This decodes each event's
// object in place, and leaves out what strip says, as the cache's
// transform would; everything else decodes as client-go decodes it, with
// client-go's code. Managed fields keep their times (the lag metrics
// read them) and lose their fieldsV1 only.
type metaSerializer struct {
	runtime.NegotiatedSerializer
	strip stripping
}

// stripping says what the cache leaves out of metadata it ingests.
type stripping struct {
	managedFields, lastApplied bool
}

func (s metaSerializer) SupportedMediaTypes() []runtime.SerializerInfo {
	infos := slices.Clone(s.NegotiatedSerializer.SupportedMediaTypes())
	for i, info := range infos {
		if info.MediaType != runtime.ContentTypeProtobuf || info.StreamSerializer == nil {
			continue
		}
		info.Serializer = &metaDecoder{Serializer: info.Serializer, strip: s.strip}
		stream := *info.StreamSerializer
		stream.Serializer = eventDecoder{stream.Serializer}
		info.StreamSerializer = &stream
		infos[i] = info
	}
	return infos
}

// eventDecoder decodes a watch event's frame leaving the event's object
// in the frame: client-go's watch decoder decodes the object before it
// reads the next frame, and nothing decoded from the frame refers to it.
type eventDecoder struct {
	runtime.Serializer
}

func (d eventDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if e, ok := into.(*metav1.WatchEvent); ok && decodeEvent(data, e) {
		return e, nil, nil
	}
	return d.Serializer.Decode(data, defaults, into)
}

// decodeEvent decodes data, a protobuf metav1.WatchEvent, into e, with
// e.Object.Raw a part of data; false if data is not one.
func decodeEvent(data []byte, e *metav1.WatchEvent) bool {
	*e = metav1.WatchEvent{}
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return false
		}
		data = data[n:]
		if typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, data); n < 0 {
				return false
			}
			data = data[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(data)
		if n < 0 {
			return false
		}
		data = data[n:]
		switch num {
		case 1:
			e.Type = eventType(v)
		case 2:
			raw, ok := field(v, 1)
			if !ok {
				return false
			}
			e.Object.Raw = raw
		}
	}
	return true
}

// eventType returns the event type named by b, without allocating for
// the types there are.
func eventType(b []byte) string {
	switch string(b) {
	case string(watch.Added):
		return string(watch.Added)
	case string(watch.Modified):
		return string(watch.Modified)
	case string(watch.Deleted):
		return string(watch.Deleted)
	case string(watch.Bookmark):
		return string(watch.Bookmark)
	}
	return string(b)
}

// field returns the last value of field num, of bytes type, in the
// protobuf message m (nil if it has none); false if m does not parse.
func field(m []byte, num protowire.Number) ([]byte, bool) {
	var v []byte
	for len(m) > 0 {
		n2, typ, n := protowire.ConsumeTag(m)
		if n < 0 {
			return nil, false
		}
		m = m[n:]
		if n = protowire.ConsumeFieldValue(n2, typ, m); n < 0 {
			return nil, false
		}
		if n2 == num && typ == protowire.BytesType {
			v, _ = protowire.ConsumeBytes(m[:n])
		}
		m = m[n:]
	}
	return v, true
}

// The version and kind of the objects metaDecoder decodes.
const (
	metaAPIVersion = "meta.k8s.io/v1"
	metaKind       = "PartialObjectMetadata"
)

// protobufPrefix starts every protobuf-encoded Kubernetes object, before
// its runtime.Unknown envelope.
const protobufPrefix = "k8s\x00"

// metaDecoder decodes a PartialObjectMetadata, leaving out what strip
// says; anything else, as its Serializer does.
type metaDecoder struct {
	runtime.Serializer
	strip stripping

	mu      sync.Mutex
	scratch []byte // the metadata being decoded, stripped
}

func (d *metaDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if _, ok := into.(*metav1.PartialObjectMetadata); ok || into == nil {
		if obj, ok := d.decode(data); ok {
			gvk := metav1.SchemeGroupVersion.WithKind(metaKind)
			return obj, &gvk, nil
		}
	}
	return d.Serializer.Decode(data, defaults, into)
}

// decode returns the PartialObjectMetadata data holds; false if data is
// anything else, or does not parse, for the Serializer to decode or fail.
func (d *metaDecoder) decode(data []byte) (*metav1.PartialObjectMetadata, bool) {
	meta, ok := metadataOf(data)
	if !ok {
		return nil, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	stripped, ok := d.strip.appendStripped(d.scratch[:0], meta)
	if !ok {
		return nil, false
	}
	d.scratch = stripped
	obj := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: metaAPIVersion, Kind: metaKind}}
	// Unmarshal copies what it keeps: obj refers to neither data nor
	// scratch.
	if err := obj.ObjectMeta.Unmarshal(stripped); err != nil {
		return nil, false
	}
	return obj, true
}

// metadataOf returns the ObjectMeta of data, a protobuf
// PartialObjectMetadata in its envelope; false for anything else.
func metadataOf(data []byte) ([]byte, bool) {
	if len(data) < len(protobufPrefix) || string(data[:len(protobufPrefix)]) != protobufPrefix {
		return nil, false
	}
	unknown := data[len(protobufPrefix):]
	typeMeta, ok1 := field(unknown, 1)
	raw, ok2 := field(unknown, 2)
	encoding, ok3 := field(unknown, 3)
	apiVersion, ok4 := field(typeMeta, 1)
	kind, ok5 := field(typeMeta, 2)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || len(encoding) > 0 ||
		string(apiVersion) != metaAPIVersion || string(kind) != metaKind {
		return nil, false
	}
	for m := raw; len(m) > 0; {
		num, typ, n := protowire.ConsumeTag(m)
		if n < 0 || num != 1 {
			return nil, false // PartialObjectMetadata has its metadata only
		}
		m = m[n:]
		if n = protowire.ConsumeFieldValue(num, typ, m); n < 0 {
			return nil, false
		}
		m = m[n:]
	}
	return field(raw, 1)
}

// The fields of ObjectMeta and ManagedFieldsEntry that strip leaves out,
// and the key of an annotation's map entry.
const (
	annotationsField   protowire.Number = 12
	managedFieldsField protowire.Number = 17
	fieldsV1Field      protowire.Number = 7
	mapKeyField        protowire.Number = 1
)

// appendStripped appends meta, a protobuf ObjectMeta, to dst without what
// s leaves out; false if meta does not parse.
func (s stripping) appendStripped(dst, meta []byte) ([]byte, bool) {
	for len(meta) > 0 {
		num, typ, n := protowire.ConsumeTag(meta)
		if n < 0 {
			return nil, false
		}
		m := protowire.ConsumeFieldValue(num, typ, meta[n:])
		if m < 0 {
			return nil, false
		}
		f := meta[:n+m]
		meta = meta[n+m:]
		if typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(f[n:])
			switch {
			case num == annotationsField && s.lastApplied:
				key, ok := field(v, mapKeyField)
				if !ok {
					return nil, false
				}
				if string(key) == lastAppliedAnnotation {
					continue
				}
			case num == managedFieldsField && s.managedFields:
				var ok bool
				if dst, ok = appendWithout(protowire.AppendTag(dst, num, typ), v, fieldsV1Field); !ok {
					return nil, false
				}
				continue
			}
		}
		dst = append(dst, f...)
	}
	return dst, true
}

// appendWithout appends m, a protobuf message, to dst as a length-
// delimited value without its field num; false if m does not parse.
func appendWithout(dst, m []byte, num protowire.Number) ([]byte, bool) {
	size := 0
	for rest := m; len(rest) > 0; {
		n2, typ, n := protowire.ConsumeTag(rest)
		if n < 0 {
			return nil, false
		}
		v := protowire.ConsumeFieldValue(n2, typ, rest[n:])
		if v < 0 {
			return nil, false
		}
		if n2 != num {
			size += n + v
		}
		rest = rest[n+v:]
	}
	dst = protowire.AppendVarint(dst, uint64(size))
	for len(m) > 0 {
		n2, typ, n := protowire.ConsumeTag(m)
		v := protowire.ConsumeFieldValue(n2, typ, m[n:])
		if n2 != num {
			dst = append(dst, m[:n+v]...)
		}
		m = m[n+v:]
	}
	return dst, true
}
