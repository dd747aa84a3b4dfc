package main

import (
	"flag"
	"fmt"
	"math"

	"k8s.io/client-go/rest"
)

// clientFlags limit the requests the operator sends to the API server,
// with one token bucket that every client the manager builds from the
// config spends (informers, reads and writes alike). Lease renewals are
// not counted against it: the manager renews through a client with a
// budget of its own.
type clientFlags struct {
	qps   float64
	burst int
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	fs.Float64Var(&c.qps, "kube-api-qps", 0, "requests a second the operator may send to the API server, all its clients together: its API budget (reconciles, reviews and watches; the Lease renewals never wait for it); 0: no fixed limit, the operator slows down when the API server pushes back with a 429")
	fs.IntVar(&c.burst, "kube-api-burst", 0, "with --kube-api-qps: requests the client may send at once above that rate; 0: --kube-api-qps rounded up")
}

func (c clientFlags) check() error {
	switch {
	case c.qps < 0 || math.IsNaN(c.qps) || math.IsInf(c.qps, 0):
		return fmt.Errorf("--kube-api-qps is %v: it must be 0 (no limit) or a positive number", c.qps)
	case c.burst < 0:
		return fmt.Errorf("--kube-api-burst is %d: it must be 0 (--kube-api-qps rounded up) or positive", c.burst)
	case c.burst > 0 && c.qps == 0:
		return fmt.Errorf("--kube-api-burst is %d without --kube-api-qps: set the rate too, or drop the burst", c.burst)
	}
	return nil
}

// apply sets cfg's QPS and Burst, if the flags ask for a limit: the
// manager's API budget takes them as its rate, one bucket for every client
// it makes, served by lane (docs/api-budget.md). A RateLimiter here would
// be a second bucket behind the budget's, queueing in arrival order what
// the budget let through by lane.
func (c clientFlags) apply(cfg *rest.Config) {
	if c.qps == 0 {
		return
	}
	cfg.QPS, cfg.Burst = float32(c.qps), c.burst
	if cfg.Burst == 0 {
		cfg.Burst = int(math.Ceil(c.qps))
	}
}
