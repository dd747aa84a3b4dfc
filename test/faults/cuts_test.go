package faults

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/manager"
)

// readiness polls url every 200ms and counts the answers by status code
// (0 for no answer) until stop is called, for a minute at most.
func readiness(url string) (stop func() map[int]int) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	codes := map[int]int{}
	var wg sync.WaitGroup
	wg.Go(func() {
		c := &http.Client{Timeout: time.Second}
		for ctx.Err() == nil {
			code := 0
			if resp, err := c.Get(url); err == nil {
				code = resp.StatusCode
				resp.Body.Close()
			}
			codes[code]++
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	})
	return func() map[int]int { cancel(); wg.Wait(); return codes }
}

// A proxy between the operator and the API server drops connections at
// random for 5s, then refuses them all for 3s, while the sources change; the operator converges once the
// network is back, without a restart.
func TestConnectionCuts(t *testing.T) {
	const (
		outage   = 8 * time.Second
		blackout = 3 * time.Second // at its end: nothing gets through
	)
	w := newWorld(t)
	nss := w.namespaces(5)
	p := startProxy(t)
	op := startOperator(t, opOptions{config: p.config(), manager: manager.Options{Health: manager.HealthOptions{BindAddress: "127.0.0.1:0", UnwatchedGrace: time.Second}}})
	const mirrors = 3
	for i := range mirrors {
		name := fmt.Sprintf("src-%d", i)
		w.configMap(w.home, name, map[string]string{"v": "0"})
		w.mirror(name, name, w.selector())
		w.eventually("copies of "+name, w.copiesEqual(nss, name, map[string]string{"v": "0"}))
	}
	readyz := "http://" + op.mgr.HealthProbeAddr() + "/readyz"

	stopPoll := readiness(readyz)
	var wg sync.WaitGroup
	wg.Go(func() {
		p.cutFor(outage - blackout)
		p.blackoutFor(blackout)
	})
	// The sources change during the outage, through a client that does
	// not go through the proxy.
	for i := 1; i <= 10; i++ {
		for j := range mirrors {
			if err := w.setData(w.home, fmt.Sprintf("src-%d", j), map[string]string{"v": fmt.Sprint(i)}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(outage / 12)
	}
	var errs []string
	for _, st := range op.mgr.Cache().Status() {
		if st.Err != nil {
			errs = append(errs, st.Err.Error())
		}
	}
	wg.Wait()
	healed := time.Now()
	during := stopPoll()
	t.Logf("outage of %v (its last %v a blackout): %d connections accepted, %d cut; /readyz answers during it: %v; cache errors seen late in it: %d %q",
		outage, blackout, p.accepted.Load(), p.cut.Load(), during, len(errs), errs)
	if p.cut.Load() == 0 {
		t.Fatal("the proxy cut nothing: the test tested nothing")
	}
	if during[http.StatusInternalServerError] == 0 {
		t.Errorf("/readyz never failed during an outage of %v with Health.UnwatchedGrace 1s: %v", outage, during)
	}

	want := map[string]string{"v": "10"}
	for i := range mirrors {
		name := fmt.Sprintf("src-%d", i)
		w.eventually("copies of "+name+" after the outage", w.copiesEqual(nss, name, want))
	}
	t.Logf("converged %v after the network healed; %v relists, %v watch restarts", time.Since(healed).Round(time.Millisecond),
		op.counter(t, imetrics.CacheRelists, nil), op.counter(t, "opkit_cache_watch_restarts_total", nil))
	eventually(t, 30*time.Second, "/readyz 200 after the outage", func() error {
		resp, err := http.Get(readyz)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz: %s", resp.Status)
		}
		return nil
	})
	select {
	case err := <-op.done:
		t.Fatalf("the operator stopped during the outage: %v", err)
	default:
	}
}
