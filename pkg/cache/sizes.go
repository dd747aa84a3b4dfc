package cache

import (
	"encoding/json"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
)

// The sampling of sizes: every object of the first sizeWarmup an informer
// ingests, then one in sizeSampleEvery, so that measuring costs a bounded
// share of ingest and nothing at a scrape.
const (
	sizeWarmup      = 16
	sizeSampleEvery = 32
)

// sizes estimates the mean encoded size of the objects an informer
// ingests, from a sample of them: their protobuf size where the type has
// one (Kubernetes' built-in types, and metadata-only objects), computed
// without encoding; else the length of their JSON encoding. The mean is
// the plain mean of the first sizeWarmup samples, then an exponentially
// weighted one (each new sample weighs 1/sizeWarmup), so that it follows
// objects that grow. Objects are sampled as they arrive, so those that
// change often weigh more than those that never do.
//
// It is an estimate of what the objects weigh encoded, not of the heap
// they take: decoded Go objects take about 3 to 6 times their protobuf
// size (see imetrics.CacheObjectBytes). observe is called by the informer's transform, one object at a
// time; mean is safe to call concurrently with it.
type sizes struct {
	seen atomic.Uint64 // objects ingested

	mu      sync.Mutex
	samples uint64
	avg     float64
}

func newSizes() *sizes { return &sizes{} }

// wrap returns next followed by sampling the object it returns.
func (s *sizes) wrap(next toolscache.TransformFunc) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		obj, err := next(obj)
		if err == nil {
			s.observe(obj)
		}
		return obj, err
	}
}

func (s *sizes) observe(obj any) {
	if n := s.seen.Add(1); n > sizeWarmup && (n-sizeWarmup)%sizeSampleEvery != 0 {
		return
	}
	size, ok := encodedSize(obj)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples++
	w := 1 / float64(min(s.samples, sizeWarmup))
	s.avg += w * (float64(size) - s.avg)
}

// mean returns the estimated mean size in bytes; 0 before any sample.
func (s *sizes) mean() float64 {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.avg
}

// encodedSize returns obj's protobuf size if it has one, else its JSON
// size; false for what is not an object (a tombstone) or fails to encode.
func encodedSize(obj any) (int, bool) {
	if _, err := meta.Accessor(obj); err != nil {
		return 0, false
	}
	if p, ok := obj.(interface {
		Size() int
		Marshal() ([]byte, error)
	}); ok {
		return p.Size(), true
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return 0, false
	}
	return len(b), true
}
