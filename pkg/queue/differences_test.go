package queue

import (
	"context"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestDifferences checks the bullets of the package documentation's
// "Differences from client-go and controller-runtime", each subtest the
// bullet its entry in differences quotes.
func TestDifferences(t *testing.T) {
	t.Run("GetAfterShutDown", func(t *testing.T) {
		q := New(Options[string]{})
		q.Add("a")
		q.Add("b")
		q.ShutDown()
		if k, _, shutdown := q.Get(); !shutdown {
			t.Errorf("Get after ShutDown handed out %q; want shutdown at once", k)
		}
		if got := q.Len(); got != 2 {
			t.Errorf("Len after ShutDown = %d, want 2: queued keys stay, undelivered", got)
		}
	})

	t.Run("ReAddDuringDrain", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := New(Options[string]{})
			q.Add("a")
			a, _, _ := q.Get()
			q.Add("a") // while processing: would be queued again at Done
			drained := make(chan error, 1)
			go func() { drained <- q.ShutDownWithDrain(context.Background()) }()
			synctest.Wait()
			q.Add("b") // during the drain: ignored
			q.Done(a)
			if err := <-drained; err != nil {
				t.Fatalf("drain: %v", err)
			}
			if k, _, shutdown := q.Get(); !shutdown {
				t.Errorf("Get after the drain handed out %q; want shutdown", k)
			}
		})
	})

	t.Run("ShutDownEndsDrain", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := New(Options[string]{Name: "widgets"})
			q.Add("stuck")
			k, _, _ := q.Get()
			drained := make(chan error, 1)
			go func() { drained <- q.ShutDownWithDrain(context.Background()) }()
			synctest.Wait()
			q.ShutDown()
			synctest.Wait()
			select {
			case err := <-drained:
				if !errors.Is(err, ErrDrainStopped) {
					t.Errorf("ShutDownWithDrain = %v, want an error wrapping ErrDrainStopped", err)
				}
				want := `drain queue "widgets": drain stopped by ShutDown: 1 keys still in flight (stuck among them)`
				if err != nil && err.Error() != want {
					t.Errorf("err = %q\nwant  %q", err, want)
				}
			default:
				t.Error("ShutDown did not end the pending ShutDownWithDrain")
				q.Done(k)
				<-drained
			}
			q.Done(k)
		})
	})

	t.Run("DrainBoundedByContext", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := New(Options[string]{})
			q.Add("stuck")
			k, _, _ := q.Get()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if err := q.ShutDownWithDrain(ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("ShutDownWithDrain = %v, want an error wrapping the context's", err)
			}
			q.Done(k)
		})
	})

	t.Run("LenCountsReadyKeysOnly", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newQueue(t, Options[string]{})
			q.Add("a")
			q.Add("b")
			q.AddAfter("c", time.Second)
			a, _, _ := q.Get()
			q.Add(a) // re-added while processing
			if got := q.Len(); got != 1 {
				t.Errorf("Len = %d, want 1: b, not a (processing, re-added) nor c (delayed)", got)
			}
			q.Done(a)
		})
	})

	t.Run("ReAddRejoinsAtDone", func(t *testing.T) {
		q := newQueue(t, Options[string]{})
		q.Add("a")
		a, _, _ := q.Get()
		q.Add(a)   // re-added while processing, first
		q.Add("b") // then another key, at the same priority
		q.Done(a)
		if diff := cmp.Diff([]string{"b", "a"}, drain(t, q)); diff != "" {
			t.Errorf("order after Done (-want +got):\n%s", diff)
		}
	})

	t.Run("RateLimitedAndAfterLongerWins", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newQueue(t, Options[string]{RateLimiter: fixedLimiter(3 * time.Second)})
			for _, after := range []time.Duration{time.Second, 5 * time.Second} {
				start := time.Now()
				q.AddWithOpts(AddOpts{RateLimited: true, After: after}, "a")
				k, _, _ := q.Get()
				if waited, want := time.Since(start), max(after, 3*time.Second); waited != want {
					t.Errorf("limiter 3s, After %v: waited %v, want %v", after, waited, want)
				}
				q.Done(k)
			}
		})
	})

	t.Run("AddMakesDelayedKeyReadyOnce", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newQueue(t, Options[string]{})
			q.AddAfter("a", time.Second)
			q.Add("a")
			if got := drain(t, q); !cmp.Equal(got, []string{"a"}) {
				t.Fatalf("now: got %v, want [a]", got)
			}
			time.Sleep(time.Second)
			synctest.Wait()
			if got := q.Len(); got != 0 {
				t.Errorf("after the delay Len = %d, want 0: the delayed add was merged into the plain one", got)
			}
		})
	})

	t.Run("AgingOvertakesPriority", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newQueue(t, Options[string]{MaxWait: time.Second})
			q.AddWithOpts(AddOpts{Priority: LowPriority}, "old")
			time.Sleep(2 * time.Second)
			q.AddWithOpts(AddOpts{Priority: 10}, "high1", "high2")
			if diff := cmp.Diff([]string{"high1", "old", "high2"}, drain(t, q)); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
		})
	})
}

// differences quote, per subtest of TestDifferences, the words of the
// package documentation's bullet that the subtest checks.
var differences = map[string]string{
	"GetAfterShutDown":              "After ShutDown, Get hands out nothing more",
	"ReAddDuringDrain":              "queued again by its Done during ShutDownWithDrain is not handed out",
	"ShutDownEndsDrain":             "A ShutDown during ShutDownWithDrain ends the drain at once",
	"DrainBoundedByContext":         "the drain also ends with its context",
	"LenCountsReadyKeysOnly":        "Len counts only keys ready to be handed out",
	"ReAddRejoinsAtDone":            "A key added again while being processed is queued at Done as if added then",
	"RateLimitedAndAfterLongerWins": "AddOpts with RateLimited and After delays by the longer of the two",
	"AddMakesDelayedKeyReadyOnce":   "A plain Add of a delayed key makes it ready now, once",
	"AgingOvertakesPriority":        "Priorities age",
}

// Every bullet of the differences in doc.go is checked by a subtest of
// TestDifferences, and every such subtest by a bullet: the subtest's
// quote in differences is in the bullet.
func TestDifferencesDocumented(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	test, err := os.ReadFile("differences_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "// # Differences")
	if !ok {
		t.Fatal("doc.go has no Differences section")
	}
	var bullets []string
	for _, b := range strings.Split(section, "\n//   - ")[1:] {
		bullets = append(bullets, strings.Join(strings.Fields(strings.ReplaceAll(b, "\n//", " ")), " "))
	}
	checked := make([]bool, len(bullets))
	for _, m := range regexp.MustCompile(`t\.Run\("(\w+)"`).FindAllStringSubmatch(string(test), -1) {
		quote, ok := differences[m[1]]
		if !ok {
			t.Errorf("subtest %s quotes no bullet of doc.go: add it to differences", m[1])
			continue
		}
		i := slices.IndexFunc(bullets, func(b string) bool { return strings.Contains(b, quote) })
		if i < 0 {
			t.Errorf("no bullet of doc.go's differences says %q (subtest %s)", quote, m[1])
			continue
		}
		checked[i] = true
	}
	for i, b := range bullets {
		if !checked[i] {
			t.Errorf("no subtest of TestDifferences checks the bullet %q", b)
		}
	}
}

// fixedLimiter delays every key by the same duration.
type fixedLimiter time.Duration

func (d fixedLimiter) When(string) time.Duration { return time.Duration(d) }
func (fixedLimiter) Forget(string)               {}
func (fixedLimiter) NumRequeues(string) int      { return 0 }
