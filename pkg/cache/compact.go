package cache

import (
	"hash/maphash"
	"maps"
	"reflect"
	"slices"
	"sync"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// compactor makes the objects of one informer share what they have in
// common: equal label, annotation, node-selector and resource maps become
// one map, equal owner references one slice (the replicas of a ReplicaSet,
// the objects an operator makes for one custom resource), and repeated
// strings (namespaces, label keys, images) one string. Cached objects are never modified (the Lister
// contract), so readers cannot tell; the heap can: a small Go map costs
// about 300 bytes however few its entries, and the replicas of one workload
// repeat nearly everything but their names.
//
// Its tables are bounded: past maxShared entries they start again, so that
// objects that come and go do not pin what they no longer share. Maps and
// owner references are found by a hash of their contents, compared in
// full on a hit, so that a table holds no copy of what it shares: two
// values whose hashes collide are left unshared.
type compactor struct {
	mu    sync.Mutex
	strs  map[string]string
	maps  map[uint64]map[string]string
	refs  map[uint64][]metav1.OwnerReference
	lists map[string]corev1.ResourceList
	// yes and no are what every shared owner reference's Controller and
	// BlockOwnerDeletion point to.
	yes, no *bool
	hash    maphash.Hash
	scratch []byte
	keys    []string
}

const maxShared = 8192

func newCompactor() *compactor {
	return &compactor{
		strs:  map[string]string{},
		maps:  map[uint64]map[string]string{},
		refs:  map[uint64][]metav1.OwnerReference{},
		lists: map[string]corev1.ResourceList{},
		yes:   new(true),
		no:    new(false),
	}
}

// compact shares what it can of obj, which nothing else holds yet, or
// which it compacted before (then it writes nothing).
func (c *compactor) compact(obj any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch o := obj.(type) {
	case *metav1.PartialObjectMetadata:
		c.share(&o.APIVersion)
		c.share(&o.Kind)
	case *corev1.Pod:
		c.podSpec(&o.Spec)
		c.podStatus(&o.Status)
	case *corev1.ConfigMap:
		c.shareEntries(o.Data)
	}
	if a, ok := obj.(metav1.ObjectMetaAccessor); ok {
		if m, ok := a.GetObjectMeta().(*metav1.ObjectMeta); ok {
			c.objectMeta(m)
		}
	}
}

func (c *compactor) objectMeta(m *metav1.ObjectMeta) {
	c.share(&m.Namespace)
	c.share(&m.GenerateName)
	c.shareMap(&m.Labels)
	c.shareMap(&m.Annotations)
	c.shareRefs(&m.OwnerReferences)
	for i := range m.Finalizers {
		c.share(&m.Finalizers[i])
	}
}

func (c *compactor) podSpec(s *corev1.PodSpec) {
	c.shareMap(&s.NodeSelector)
	c.share(&s.NodeName)
	c.share(&s.ServiceAccountName)
	c.share(&s.DeprecatedServiceAccount)
	c.share(&s.SchedulerName)
	c.share(&s.PriorityClassName)
	for i := range s.InitContainers {
		c.container(&s.InitContainers[i])
	}
	for i := range s.Containers {
		c.container(&s.Containers[i])
	}
	for i := range s.Tolerations {
		c.share(&s.Tolerations[i].Key)
		c.share(&s.Tolerations[i].Value)
	}
	for i := range s.Volumes {
		c.share(&s.Volumes[i].Name)
	}
}

func (c *compactor) container(k *corev1.Container) {
	c.share(&k.Name)
	c.share(&k.Image)
	c.share(&k.TerminationMessagePath)
	for i := range k.Command {
		c.share(&k.Command[i])
	}
	for i := range k.Args {
		c.share(&k.Args[i])
	}
	for i := range k.Ports {
		c.share(&k.Ports[i].Name)
	}
	for i := range k.Env {
		c.share(&k.Env[i].Name)
		c.share(&k.Env[i].Value)
	}
	for i := range k.VolumeMounts {
		c.share(&k.VolumeMounts[i].Name)
		c.share(&k.VolumeMounts[i].MountPath)
	}
	c.shareList(&k.Resources.Requests)
	c.shareList(&k.Resources.Limits)
	for _, p := range []*corev1.Probe{k.LivenessProbe, k.ReadinessProbe, k.StartupProbe} {
		if p != nil && p.HTTPGet != nil {
			c.share(&p.HTTPGet.Path)
		}
	}
}

func (c *compactor) podStatus(s *corev1.PodStatus) {
	c.share(&s.HostIP)
	c.share(&s.Reason)
	c.share(&s.Message)
	for i := range s.ContainerStatuses {
		cs := &s.ContainerStatuses[i]
		c.share(&cs.Name)
		c.share(&cs.Image)
		c.share(&cs.ImageID)
	}
}

// share sets *p to the shared copy of its string, writing only if that is
// another string: an object transformed twice (a watch-list's objects are)
// is not written the second time, while others may read it.
func (c *compactor) share(p *string) {
	if v := c.str(*p); unsafe.StringData(v) != unsafe.StringData(*p) {
		*p = v
	}
}

// shareEntries makes m's keys shared strings, in place: a ConfigMap's
// data is rarely equal to another's as a whole, but its keys are. (Its
// values are often one object's own, and would only crowd the table.) It
// writes only an entry whose key is another string.
func (c *compactor) shareEntries(m map[string]string) {
	for k, v := range m {
		if sk := c.str(k); unsafe.StringData(sk) != unsafe.StringData(k) {
			// An existing key: the map takes sk as its key.
			m[sk] = v
		}
	}
}

// shareMap sets *p to the shared map equal to it, writing only if that is
// another map.
func (c *compactor) shareMap(p *map[string]string) {
	if v := c.stringMap(*p); !sameMap(v, *p) {
		*p = v
	}
}

// shareList sets *p to the shared list equal to it, writing only if that
// is another list.
func (c *compactor) shareList(p *corev1.ResourceList) {
	if v := c.resourceList(*p); !sameMap(v, *p) {
		*p = v
	}
}

// shareRefs sets *p to the shared owner references equal to it, writing
// only if that is another slice. The first of its kind becomes the shared
// one, its kinds and API versions shared strings and its bools pointing to
// the compactor's.
func (c *compactor) shareRefs(p *[]metav1.OwnerReference) {
	refs := *p
	if len(refs) == 0 {
		return
	}
	h := c.refsHash(refs)
	if shared, ok := c.refs[h]; ok {
		if unsafe.SliceData(shared) != unsafe.SliceData(refs) && equalRefs(shared, refs) {
			*p = shared
		}
		return
	}
	for i := range refs {
		r := &refs[i]
		c.share(&r.APIVersion)
		c.share(&r.Kind)
		c.shareBool(&r.Controller)
		c.shareBool(&r.BlockOwnerDeletion)
	}
	if len(c.refs) >= maxShared {
		clear(c.refs)
	}
	c.refs[h] = refs
}

// shareBool sets *p to the compactor's pointer to the same value, writing
// only if that is another pointer.
func (c *compactor) shareBool(p **bool) {
	if *p == nil {
		return
	}
	v := c.no
	if **p {
		v = c.yes
	}
	if *p != v {
		*p = v
	}
}

func (c *compactor) refsHash(refs []metav1.OwnerReference) uint64 {
	c.hash.Reset()
	for _, r := range refs {
		for _, s := range []string{r.APIVersion, r.Kind, r.Name, string(r.UID)} {
			c.hash.WriteString(s)
			c.hash.WriteByte(0)
		}
		c.hash.WriteByte(boolByte(r.Controller))
		c.hash.WriteByte(boolByte(r.BlockOwnerDeletion))
	}
	return c.hash.Sum64()
}

// boolByte encodes an optional bool: unset, false or true.
func boolByte(b *bool) byte {
	switch {
	case b == nil:
		return 0
	case *b:
		return 2
	default:
		return 1
	}
}

func equalRefs(a, b []metav1.OwnerReference) bool {
	return slices.EqualFunc(a, b, func(x, y metav1.OwnerReference) bool {
		return x.APIVersion == y.APIVersion && x.Kind == y.Kind && x.Name == y.Name && x.UID == y.UID &&
			boolByte(x.Controller) == boolByte(y.Controller) && boolByte(x.BlockOwnerDeletion) == boolByte(y.BlockOwnerDeletion)
	})
}

// sameMap reports whether a and b are the same map (not merely equal).
func sameMap[M ~map[K]V, K comparable, V any](a, b M) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// str returns the shared copy of s.
func (c *compactor) str(s string) string {
	if s == "" {
		return s
	}
	if v, ok := c.strs[s]; ok {
		return v
	}
	if len(c.strs) >= maxShared {
		clear(c.strs)
	}
	c.strs[s] = s
	return s
}

// stringMap returns the shared map equal to m, made of shared strings.
func (c *compactor) stringMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	// The sum of the entries' hashes does not depend on the map's order.
	var h uint64
	for k, v := range m {
		c.hash.Reset()
		c.hash.WriteString(k)
		c.hash.WriteByte(0)
		c.hash.WriteString(v)
		h += c.hash.Sum64()
	}
	if shared, ok := c.maps[h]; ok {
		if maps.Equal(shared, m) {
			return shared
		}
		return m
	}
	shared := make(map[string]string, len(m))
	for k, v := range m {
		shared[c.str(k)] = c.str(v)
	}
	if len(c.maps) >= maxShared {
		clear(c.maps)
	}
	c.maps[h] = shared
	return shared
}

// resourceList returns the shared list equal to l.
func (c *compactor) resourceList(l corev1.ResourceList) corev1.ResourceList {
	if len(l) == 0 {
		return l
	}
	c.keys = c.keys[:0]
	for k := range l {
		c.keys = append(c.keys, string(k))
	}
	slices.Sort(c.keys)
	b := c.scratch[:0]
	for _, k := range c.keys {
		q := l[corev1.ResourceName(k)]
		b = append(append(append(append(b, k...), 0), q.String()...), 0)
	}
	c.scratch = b
	if shared, ok := c.lists[string(b)]; ok {
		return shared
	}
	if len(c.lists) >= maxShared {
		clear(c.lists)
	}
	c.lists[string(b)] = l
	return l
}
