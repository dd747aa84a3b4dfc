package budget

import (
	"fmt"
	"math"

	"github.com/go-logr/logr"
)

// CheckRate reports an error if qps or burst, as a user set them in a
// manager's or a fleet's APIBudget options, is neither 0 (the default)
// nor a finite positive number.
func CheckRate(qps float64, burst int) error {
	if qps < 0 || burst < 0 || math.IsNaN(qps) || math.IsInf(qps, 0) {
		return fmt.Errorf("APIBudget: QPS (%v) and Burst (%d) must be 0 (the default) or positive", qps, burst)
	}
	return nil
}

// Rate returns the rate and burst a budget takes from the options' qps
// and burst and the rest.Config's QPS and Burst: the options' when qps is
// set; else the config's when its QPS is positive, so that a kubeconfig's
// or a flag's limit bounds the whole operator rather than each client;
// else none fixed (0).
func Rate(qps float64, burst int, configQPS float32, configBurst int) (float64, int) {
	if qps == 0 && configQPS > 0 {
		qps = float64(configQPS)
		if burst == 0 {
			burst = configBurst
		}
	}
	return qps, burst
}

// LogPushbacks returns an Options.OnPushback that logs each pushback with
// log at info level, as msg, with what the server said and the limits it
// leaves.
func LogPushbacks(log logr.Logger, msg string) func(Pushback) {
	return func(p Pushback) {
		kv := []any{"reason", string(p.Reason), "lane", p.Lane.String(), "controller", p.Controller}
		if p.Reason == ReasonLatency {
			kv = append(kv, "latency", p.Latency)
		} else {
			kv = append(kv, "status", p.Status, "retryAfter", p.RetryAfter)
		}
		log.Info(msg, append(kv, "flowSchemaUID", p.FlowSchema, "priorityLevelUID", p.PriorityLevel,
			"rate", limitValue(p.Rate), "inFlightLimit", limitValue(p.Concurrency))...)
	}
}

// limitValue is a limit for a log line: "none" for +Inf, which JSON
// cannot hold.
func limitValue(v float64) any {
	if math.IsInf(v, 1) {
		return "none"
	}
	return v
}
