package bodybudget

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"golang.org/x/sync/semaphore"
)

// Bounds of every Budget.
const (
	// SmallBody is the largest body that may use the reserved lane: a
	// legitimate Mirror, or a review of one, is a few KiB.
	SmallBody = 256 << 10
	// Reserved is the part of a budget only small bodies may hold: eight
	// of the largest small bodies at once.
	Reserved = 8 * SmallBody
	// BaseReadTime is what any body is given to arrive, on top of its
	// length at MinRate: the API server sends its reviews at once.
	BaseReadTime = 5 * time.Second
	// MinRate is the slowest a body may arrive once admitted, in bytes
	// per second: a 7 MiB body gets 12 s.
	MinRate = 1 << 20
)

// ErrFull is returned by Admit for a large body that found the budget's
// shared part taken: it is shed with 503 rather than queued.
var ErrFull = errors.New("the webhook server is reading as many large request bodies as it may at once")

// Budget bounds the bytes of request bodies admitted at once; see the
// package doc.
type Budget struct {
	// shared is what any body may hold: the budget less Reserved.
	shared *semaphore.Weighted
	// reserved is what only bodies of at most SmallBody may hold.
	reserved *semaphore.Weighted
	// unknown is the weight of a body that tells no length.
	unknown int64
}

// New returns a Budget of total bytes, of which Reserved are for small
// bodies; a body of unknown length weighs maxBody. total must exceed
// Reserved by at least maxBody, so that the largest body fits.
func New(total, maxBody int64) *Budget {
	if total < Reserved+maxBody {
		panic(fmt.Sprintf("bodybudget: a total of %d bytes holds no body of %d beside the reserved %d", total, maxBody, Reserved))
	}
	return &Budget{
		shared:   semaphore.NewWeighted(total - Reserved),
		reserved: semaphore.NewWeighted(Reserved),
		unknown:  maxBody,
	}
}

// ReadTime is how long a body of length bytes is given to arrive.
func ReadTime(length int64) time.Duration {
	return BaseReadTime + time.Duration(length)*time.Second/MinRate
}

// Admit takes r's share of the budget and sets the deadline by which its
// body must be read (ReadTime), or returns an error to answer with 503:
// ErrFull for a large body that found no room, the context's error for a
// small body whose context ended while it waited. release gives the share
// back; call it once the handler is done with the body.
func (b *Budget) Admit(w http.ResponseWriter, r *http.Request) (release func(), err error) {
	weight := b.unknown
	if r.ContentLength > 0 {
		weight = r.ContentLength
	}
	sem, err := b.take(r, weight)
	if err != nil {
		return nil, err
	}
	// Best effort: a ResponseWriter without deadlines (a test's
	// recorder) reads without one.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(ReadTime(weight)))
	return func() { sem.Release(weight) }, nil
}

// take acquires weight from the lane r may use and returns that lane.
func (b *Budget) take(r *http.Request, weight int64) (*semaphore.Weighted, error) {
	if weight > SmallBody {
		if !b.shared.TryAcquire(weight) {
			return nil, ErrFull
		}
		return b.shared, nil
	}
	switch {
	case b.reserved.TryAcquire(weight):
		return b.reserved, nil
	case b.shared.TryAcquire(weight):
		return b.shared, nil
	}
	if err := b.reserved.Acquire(r.Context(), weight); err != nil {
		return nil, fmt.Errorf("wait for room to read a request body: %w", err)
	}
	return b.reserved, nil
}
