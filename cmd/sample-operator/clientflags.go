package main

import (
	"flag"
	"fmt"
	"math"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
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
	fs.Float64Var(&c.qps, "kube-api-qps", 0, "requests a second the operator may send to the API server, all its clients together (reconciles and watches; not the Lease renewals, which have a budget of their own); 0: no client-side limit, the API server's priority and fairness protects it")
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

// apply sets cfg's client-side rate limit, if the flags ask for one: a
// RateLimiter, which client-go shares among the clients built from cfg
// (QPS and Burst alone would give each its own bucket).
func (c clientFlags) apply(cfg *rest.Config) {
	if c.qps == 0 {
		return
	}
	cfg.QPS, cfg.Burst = float32(c.qps), c.burst
	if cfg.Burst == 0 {
		cfg.Burst = int(math.Ceil(c.qps))
	}
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
}
