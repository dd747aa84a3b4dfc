package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// The fill: objects the Mirror operator watches (it caches every
// ConfigMap and Secret of the cluster) but never copies, shaped as real
// clusters hold them. Half are created the way kubectl apply creates them
// (client-side apply: a create by the field manager kubectl uses, carrying
// the object's JSON in the last-applied-configuration annotation), half by
// server-side apply, as Helm 4 and GitOps tools do, so their managedFields
// are of the Apply kind. That is the realistic shape; the small shape
// (shapeSmall) is what simpler benchmarks fill a cluster with.

const (
	lastApplied    = "kubectl.kubernetes.io/last-applied-configuration"
	csaManager     = "kubectl-client-side-apply"
	ssaManager     = "helm"
	fillLabel      = "bench.opkit.dev/fill"
	minKeys        = 3
	maxKeys        = 6
	minValueBytes  = 150
	maxValueBytes  = 3 << 10
	fillGoroutines = 24
	smallKey       = "value"
	smallValue     = 16 // bytes
)

// The fill's object shapes.
const (
	// shapeRealistic: the objects of fillObject, as kubectl apply and
	// server-side apply leave them.
	shapeRealistic = "realistic"
	// shapeSmall: one key of smallValue bytes, only the fill's label, no
	// annotation, created by a plain create (managedFields: one Update
	// entry by the client's default manager).
	shapeSmall = "small"
)

var shapes = []string{shapeRealistic, shapeSmall}

type fillOptions struct {
	configMaps, secrets, namespaces int
	shape                           string // shapeRealistic or shapeSmall
	// prefix, if set, names the namespaces prefix-NN instead of the
	// shape's names, so that two fills of one control plane never share a
	// namespace that the first left Terminating.
	prefix string
}

// describe says what the fill's objects are, for the table's title.
func (f fillOptions) describe() string {
	if f.shape == shapeSmall {
		return fmt.Sprintf("small: one %d-byte key, one label, no annotation, plain create", smallValue)
	}
	return fmt.Sprintf("half kubectl client-side apply, half server-side apply, %d–%d keys of %d B–%d KiB each",
		minKeys, maxKeys, minValueBytes, maxValueBytes>>10)
}

// fillNamespace returns the name of the realistic fill's namespace i.
func fillNamespace(i int) string { return fmt.Sprintf("fill-%02d", i) }

// smallFillNamespace returns the name of the small fill's namespace i:
// not the realistic fill's, which unfill leaves Terminating.
func smallFillNamespace(i int) string { return fmt.Sprintf("fill-small-%02d", i) }

// namespace returns the name of f's namespace i.
func (f fillOptions) namespace(i int) string {
	if f.prefix != "" {
		return fmt.Sprintf("%s-%02d", f.prefix, i)
	}
	if f.shape == shapeSmall {
		return smallFillNamespace(i)
	}
	return fillNamespace(i)
}

var apps = []string{"checkout", "payments", "catalog", "search", "auth", "gateway", "billing", "inventory", "notifications", "reports"}

// fillObject returns the fill's object i (a ConfigMap for kind
// KindConfigMap, else a Secret), and whether it is created by server-side
// apply (odd i) rather than client-side apply. The same i gives the same
// object: its content comes from a generator seeded with i.
func fillObject(kind string, i int, namespaces int) (obj any, meta *metav1.ObjectMeta, ssa bool) {
	rng := rand.New(rand.NewPCG(uint64(i), uint64(len(kind))))
	app := apps[i%len(apps)]
	ssa = i%2 == 1
	manager := "kubectl"
	if ssa {
		manager = "Helm"
	}
	m := metav1.ObjectMeta{
		Namespace: fillNamespace(i % namespaces),
		Labels: map[string]string{
			"app.kubernetes.io/name":       app,
			"app.kubernetes.io/instance":   fmt.Sprintf("%s-%d", app, i%7),
			"app.kubernetes.io/version":    fmt.Sprintf("1.%d.%d", i%13, i%5),
			"app.kubernetes.io/component":  []string{"api", "worker", "frontend", "db"}[i%4],
			"app.kubernetes.io/part-of":    "shop",
			"app.kubernetes.io/managed-by": manager,
			fillLabel:                      "true",
		},
	}
	keys := minKeys + rng.IntN(maxKeys-minKeys+1)
	if kind == "ConfigMap" {
		m.Name = fmt.Sprintf("%s-config-%05d", app, i)
		cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: m, Data: map[string]string{}}
		for k := range keys {
			cm.Data[configKeys[k]] = configText(rng, valueSize(rng))
		}
		return cm, &cm.ObjectMeta, ssa
	}
	m.Name = fmt.Sprintf("%s-secret-%05d", app, i)
	s := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: m, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{}}
	for k := range keys {
		s.Data[secretKeys[k]] = secretValue(rng, secretKeys[k])
	}
	return s, &s.ObjectMeta, ssa
}

var (
	configKeys = []string{"application.yaml", "logging.properties", "nginx.conf", "settings.json", "features.yaml", "env"}
	secretKeys = []string{"tls.crt", "tls.key", "ca.crt", "password", "token", "config.json"}
)

// valueSize returns a key's size in bytes, log-uniform between
// minValueBytes and maxValueBytes: most values are small, a few large.
func valueSize(rng *rand.Rand) int {
	return int(minValueBytes * math.Pow(maxValueBytes/minValueBytes, rng.Float64()))
}

// configText returns n bytes of configuration file: key: value lines.
func configText(rng *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		fmt.Fprintf(&b, "service.%s.setting_%d: value-%08x\n", apps[rng.IntN(len(apps))], rng.IntN(100), rng.Uint32())
	}
	return b.String()[:n]
}

// secretValue returns a secret's value: PEM blocks for certificates and
// keys (1–2 KiB, as RSA 2048 ones are), short random strings otherwise.
func secretValue(rng *rand.Rand, key string) []byte {
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	block := func(kind string, n int) []byte {
		enc := base64.StdEncoding.EncodeToString(random(n))
		var b strings.Builder
		fmt.Fprintf(&b, "-----BEGIN %s-----\n", kind)
		for len(enc) > 64 {
			b.WriteString(enc[:64] + "\n")
			enc = enc[64:]
		}
		fmt.Fprintf(&b, "%s\n-----END %s-----\n", enc, kind)
		return []byte(b.String())
	}
	switch key {
	case "tls.crt", "ca.crt":
		return block("CERTIFICATE", 800+rng.IntN(400))
	case "tls.key":
		return block("PRIVATE KEY", 1190+rng.IntN(30))
	case "config.json":
		return fmt.Appendf(nil, `{"auths":{"registry.example.com":{"auth":%q}}}`, base64.StdEncoding.EncodeToString(random(48)))
	}
	return []byte(base64.RawURLEncoding.EncodeToString(random(16 + rng.IntN(48))))
}

// withLastApplied sets obj's last-applied-configuration annotation to its
// JSON, as kubectl apply does on create (the annotation leaves itself out).
func withLastApplied(obj any, meta *metav1.ObjectMeta) error {
	js, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("encode the last-applied configuration: %w", err)
	}
	meta.Annotations = map[string]string{lastApplied: string(js) + "\n"}
	return nil
}

// smallFillObject returns the small shape's object i (a ConfigMap for kind
// KindConfigMap, else a Secret): the name and namespace of fillObject's,
// one key, the fill's label alone.
func smallFillObject(kind string, i int, namespaces int) (obj any, meta *metav1.ObjectMeta) {
	m := metav1.ObjectMeta{Namespace: smallFillNamespace(i % namespaces), Labels: map[string]string{fillLabel: "true"}}
	value := fmt.Sprintf("%0*d", smallValue, i)
	if kind == "ConfigMap" {
		m.Name = fmt.Sprintf("small-config-%05d", i)
		cm := &corev1.ConfigMap{ObjectMeta: m, Data: map[string]string{smallKey: value}}
		return cm, &cm.ObjectMeta
	}
	m.Name = fmt.Sprintf("small-secret-%05d", i)
	s := &corev1.Secret{ObjectMeta: m, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{smallKey: []byte(value)}}
	return s, &s.ObjectMeta
}

// createFillObject creates f's object i of kind in the API server, in
// f.namespace(i % f.namespaces).
func createFillObject(ctx context.Context, cs kubernetes.Interface, f fillOptions, kind string, i int) error {
	if f.shape == shapeSmall {
		obj, meta := smallFillObject(kind, i, f.namespaces)
		meta.Namespace = f.namespace(i % f.namespaces)
		var err error
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			_, err = cs.CoreV1().ConfigMaps(meta.Namespace).Create(ctx, cm, metav1.CreateOptions{})
		} else {
			_, err = cs.CoreV1().Secrets(meta.Namespace).Create(ctx, obj.(*corev1.Secret), metav1.CreateOptions{})
		}
		return err
	}
	obj, meta, ssa := fillObject(kind, i, f.namespaces)
	meta.Namespace = f.namespace(i % f.namespaces)
	if ssa {
		body, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		force := true
		opts := metav1.PatchOptions{FieldManager: ssaManager, Force: &force}
		if kind == "ConfigMap" {
			_, err = cs.CoreV1().ConfigMaps(meta.Namespace).Patch(ctx, meta.Name, types.ApplyPatchType, body, opts)
		} else {
			_, err = cs.CoreV1().Secrets(meta.Namespace).Patch(ctx, meta.Name, types.ApplyPatchType, body, opts)
		}
		return err
	}
	if err := withLastApplied(obj, meta); err != nil {
		return err
	}
	opts := metav1.CreateOptions{FieldManager: csaManager}
	var err error
	if cm, ok := obj.(*corev1.ConfigMap); ok {
		_, err = cs.CoreV1().ConfigMaps(meta.Namespace).Create(ctx, cm, opts)
	} else {
		_, err = cs.CoreV1().Secrets(meta.Namespace).Create(ctx, obj.(*corev1.Secret), opts)
	}
	return err
}

// fillCluster creates the fill's namespaces and objects, fillGoroutines at a
// time, and logs how long it took.
func fillCluster(ctx context.Context, cs kubernetes.Interface, f fillOptions) error {
	start := time.Now()
	for i := range f.namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.namespace(i), Labels: map[string]string{fillLabel: "true"}}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create fill namespace: %w", err)
		}
	}
	type item struct {
		kind string
		i    int
	}
	items := make(chan item)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for range fillGoroutines {
		wg.Go(func() {
			for it := range items {
				if err := createFillObject(ctx, cs, f, it.kind, it.i); err != nil {
					cancel(fmt.Errorf("fill %s %d: %w", it.kind, it.i, err))
				}
			}
		})
	}
feed:
	for i := range max(f.configMaps, f.secrets) {
		for _, it := range []item{{"ConfigMap", i}, {"Secret", i}} {
			if (it.kind == "ConfigMap" && i >= f.configMaps) || (it.kind == "Secret" && i >= f.secrets) {
				continue
			}
			select {
			case items <- it:
			case <-ctx.Done():
				break feed
			}
		}
	}
	close(items)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	logf("filled the cluster with %d ConfigMaps and %d Secrets in %d namespaces (%s) in %v",
		f.configMaps, f.secrets, f.namespaces, f.shape, time.Since(start).Round(time.Millisecond))
	return nil
}

// unfill deletes the fill's objects and namespaces (which stay
// Terminating, empty), so that later scenarios run in an empty cluster.
func unfill(ctx context.Context, cs kubernetes.Interface, f fillOptions) error {
	var errs []error
	for i := range f.namespaces {
		ns := f.namespace(i)
		errs = append(errs,
			cs.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}),
			cs.CoreV1().Secrets(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}),
			ignoreNotFound(cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("delete the fill: %w", err)
	}
	return nil
}
