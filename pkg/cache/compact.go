package cache

import (
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// compactor makes the objects of one informer share what they have in
// common: equal label, annotation, node-selector and resource maps become
// one map, and repeated strings (namespaces, label keys, images, owner
// names) one string. Cached objects are never modified (the Lister
// contract), so readers cannot tell; the heap can: a small Go map costs
// about 300 bytes however few its entries, and the replicas of one workload
// repeat nearly everything but their names.
//
// Its tables are bounded: past maxShared entries they start again, so that
// objects that come and go do not pin what they no longer share.
type compactor struct {
	mu      sync.Mutex
	strs    map[string]string
	maps    map[string]map[string]string
	lists   map[string]corev1.ResourceList
	scratch []byte
	keys    []string
}

const maxShared = 8192

func newCompactor() *compactor {
	return &compactor{
		strs:  map[string]string{},
		maps:  map[string]map[string]string{},
		lists: map[string]corev1.ResourceList{},
	}
}

// compact shares what it can of obj, which nothing else holds yet.
func (c *compactor) compact(obj any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch o := obj.(type) {
	case *metav1.PartialObjectMetadata:
		o.APIVersion, o.Kind = c.str(o.APIVersion), c.str(o.Kind)
	case *corev1.Pod:
		c.podSpec(&o.Spec)
		c.podStatus(&o.Status)
	}
	if a, ok := obj.(metav1.ObjectMetaAccessor); ok {
		if m, ok := a.GetObjectMeta().(*metav1.ObjectMeta); ok {
			c.objectMeta(m)
		}
	}
}

func (c *compactor) objectMeta(m *metav1.ObjectMeta) {
	m.Namespace = c.str(m.Namespace)
	m.GenerateName = c.str(m.GenerateName)
	m.Labels = c.stringMap(m.Labels)
	m.Annotations = c.stringMap(m.Annotations)
	for i := range m.OwnerReferences {
		r := &m.OwnerReferences[i]
		r.APIVersion, r.Kind, r.Name = c.str(r.APIVersion), c.str(r.Kind), c.str(r.Name)
		r.UID = types.UID(c.str(string(r.UID)))
	}
	for i, f := range m.Finalizers {
		m.Finalizers[i] = c.str(f)
	}
}

func (c *compactor) podSpec(s *corev1.PodSpec) {
	s.NodeSelector = c.stringMap(s.NodeSelector)
	s.NodeName = c.str(s.NodeName)
	s.ServiceAccountName = c.str(s.ServiceAccountName)
	s.DeprecatedServiceAccount = c.str(s.DeprecatedServiceAccount)
	s.SchedulerName = c.str(s.SchedulerName)
	s.PriorityClassName = c.str(s.PriorityClassName)
	for i := range s.InitContainers {
		c.container(&s.InitContainers[i])
	}
	for i := range s.Containers {
		c.container(&s.Containers[i])
	}
	for i := range s.Tolerations {
		t := &s.Tolerations[i]
		t.Key, t.Value = c.str(t.Key), c.str(t.Value)
	}
	for i := range s.Volumes {
		s.Volumes[i].Name = c.str(s.Volumes[i].Name)
	}
}

func (c *compactor) container(k *corev1.Container) {
	k.Name, k.Image = c.str(k.Name), c.str(k.Image)
	k.TerminationMessagePath = c.str(k.TerminationMessagePath)
	for i, s := range k.Command {
		k.Command[i] = c.str(s)
	}
	for i, s := range k.Args {
		k.Args[i] = c.str(s)
	}
	for i := range k.Ports {
		k.Ports[i].Name = c.str(k.Ports[i].Name)
	}
	for i := range k.Env {
		e := &k.Env[i]
		e.Name, e.Value = c.str(e.Name), c.str(e.Value)
	}
	for i := range k.VolumeMounts {
		v := &k.VolumeMounts[i]
		v.Name, v.MountPath = c.str(v.Name), c.str(v.MountPath)
	}
	k.Resources.Requests = c.resourceList(k.Resources.Requests)
	k.Resources.Limits = c.resourceList(k.Resources.Limits)
	for _, p := range []*corev1.Probe{k.LivenessProbe, k.ReadinessProbe, k.StartupProbe} {
		if p != nil && p.HTTPGet != nil {
			p.HTTPGet.Path = c.str(p.HTTPGet.Path)
		}
	}
}

func (c *compactor) podStatus(s *corev1.PodStatus) {
	s.HostIP, s.Reason, s.Message = c.str(s.HostIP), c.str(s.Reason), c.str(s.Message)
	for i := range s.ContainerStatuses {
		cs := &s.ContainerStatuses[i]
		cs.Name, cs.Image, cs.ImageID = c.str(cs.Name), c.str(cs.Image), c.str(cs.ImageID)
	}
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
	c.keys = c.keys[:0]
	for k := range m {
		c.keys = append(c.keys, k)
	}
	slices.Sort(c.keys)
	b := c.scratch[:0]
	for _, k := range c.keys {
		b = append(append(append(append(b, k...), 0), m[k]...), 0)
	}
	c.scratch = b
	if shared, ok := c.maps[string(b)]; ok {
		return shared
	}
	shared := make(map[string]string, len(m))
	for k, v := range m {
		shared[c.str(k)] = c.str(v)
	}
	if len(c.maps) >= maxShared {
		clear(c.maps)
	}
	c.maps[string(b)] = shared
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
