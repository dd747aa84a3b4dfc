package budget

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// A pushback's log line holds the rate and the in-flight limit, +Inf when
// none applies: every value must be one a JSON logger can encode (the
// manager's printed "<internal error: json: unsupported value: +Inf>",
// and a fleet member's logged them raw).
func TestLogPushbacksEncodesNoLimit(t *testing.T) {
	var kvs []any
	sink := recordSink{kvs: &kvs}
	var lines []string
	logs := []logr.Logger{logr.New(sink), funcr.NewJSON(func(s string) { lines = append(lines, s) }, funcr.Options{})}
	for _, log := range logs {
		LogPushbacks(log, "pushed back")(Pushback{Reason: ReasonTooManyRequests, Lane: LaneReconcile, Status: 429,
			Rate: math.Inf(1), Concurrency: math.Inf(1)})
		LogPushbacks(log, "pushed back")(Pushback{Reason: ReasonLatency, Rate: 12.5, Concurrency: 4})
	}
	for i := 1; i < len(kvs); i += 2 {
		if _, err := json.Marshal(kvs[i]); err != nil {
			t.Errorf("%v = %v: %v", kvs[i-1], kvs[i], err)
		}
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) || strings.Contains(l, "error") {
			t.Errorf("not a clean JSON line: %s", l)
		}
	}
	if len(lines) != 2 || !strings.Contains(lines[0], `"rate":"none"`) || !strings.Contains(lines[1], `"rate":12.5`) {
		t.Errorf("lines %q: want the first's rate none and the second's 12.5", lines)
	}
}

type recordSink struct {
	logr.LogSink
	kvs *[]any
}

func (s recordSink) Init(logr.RuntimeInfo)           {}
func (s recordSink) Enabled(int) bool                { return true }
func (s recordSink) Info(_ int, _ string, kv ...any) { *s.kvs = append(*s.kvs, kv...) }

func TestCheckRate(t *testing.T) {
	for _, c := range []struct {
		qps   float64
		burst int
		ok    bool
	}{{0, 0, true}, {50, 5, true}, {-1, 0, false}, {1, -1, false}, {math.NaN(), 0, false}, {math.Inf(1), 0, false}} {
		err := CheckRate(c.qps, c.burst)
		if (err == nil) != c.ok {
			t.Errorf("CheckRate(%v, %d) = %v, want ok %v", c.qps, c.burst, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "must be 0 (the default) or positive") {
			t.Errorf("CheckRate(%v, %d) = %v: does not say what to do", c.qps, c.burst, err)
		}
	}
}

func TestRateDefaultsToTheConfigs(t *testing.T) {
	for _, c := range []struct {
		qps       float64
		burst     int
		cfgQPS    float32
		cfgBurst  int
		wantQPS   float64
		wantBurst int
	}{
		{0, 0, 0, 0, 0, 0},     // none fixed
		{0, 0, -1, 0, 0, 0},    // controller-runtime's QPS -1: none fixed
		{0, 0, 20, 30, 20, 30}, // the config's
		{0, 7, 20, 30, 20, 7},  // the config's rate, the options' burst
		{50, 0, 20, 30, 50, 0}, // the options' (Burst then defaults to 2×QPS)
		{50, 5, 20, 30, 50, 5},
	} {
		qps, burst := Rate(c.qps, c.burst, c.cfgQPS, c.cfgBurst)
		if qps != c.wantQPS || burst != c.wantBurst {
			t.Errorf("Rate(%v, %d, %v, %d) = %v, %d; want %v, %d", c.qps, c.burst, c.cfgQPS, c.cfgBurst, qps, burst, c.wantQPS, c.wantBurst)
		}
	}
}
