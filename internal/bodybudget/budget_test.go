package bodybudget_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/opkit-dev/opkit/internal/bodybudget"
)

const maxBody = 7 << 20

func request(ctx context.Context, length int64) *http.Request {
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/x", http.NoBody)
	r.ContentLength = length
	return r
}

// Large bodies fill the shared part and the next is shed at once; small
// ones still get in through their reserved lane; a small one that finds
// both full waits until its context ends; room given back is taken again.
func TestLanes(t *testing.T) {
	b := bodybudget.New(2*maxBody, maxBody)
	admit := func(ctx context.Context, length int64) (func(), error) {
		return b.Admit(httptest.NewRecorder(), request(ctx, length))
	}
	large, err := admit(t.Context(), 2*maxBody-bodybudget.Reserved)
	if err != nil {
		t.Fatalf("the first large body: %v", err)
	}
	if _, err := admit(t.Context(), bodybudget.SmallBody+1); !errors.Is(err, bodybudget.ErrFull) {
		t.Errorf("a large body with the shared part taken: %v, want ErrFull", err)
	}
	if _, err := admit(t.Context(), -1); !errors.Is(err, bodybudget.ErrFull) {
		t.Errorf("a body of unknown length with the shared part taken: %v, want ErrFull", err)
	}
	var smalls []func()
	for i := range bodybudget.Reserved / bodybudget.SmallBody {
		release, err := admit(t.Context(), bodybudget.SmallBody)
		if err != nil {
			t.Fatalf("small body %d with the shared part taken: %v", i, err)
		}
		smalls = append(smalls, release)
	}
	done, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := admit(done, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("a small body with no room, its context done: %v, want context.Canceled", err)
	}
	waited := make(chan error, 1)
	go func() {
		release, err := admit(t.Context(), bodybudget.SmallBody)
		if err == nil {
			release()
		}
		waited <- err
	}()
	smalls[0]()
	if err := <-waited; err != nil {
		t.Errorf("a small body waiting for room given back: %v", err)
	}
	large()
	if release, err := admit(t.Context(), maxBody); err != nil {
		t.Errorf("a large body once the shared part is given back: %v", err)
	} else {
		release()
	}
}

// A body is given a few seconds plus its length at the minimum rate.
func TestReadTime(t *testing.T) {
	for _, tt := range []struct {
		length int64
		want   time.Duration
	}{
		{0, 5 * time.Second},
		{1 << 20, 6 * time.Second},
		{7 << 20, 12 * time.Second},
	} {
		if got := bodybudget.ReadTime(tt.length); got != tt.want {
			t.Errorf("ReadTime(%d) = %v, want %v", tt.length, got, tt.want)
		}
	}
}
