package manager

import (
	"encoding/json"
	"math"
	"testing"
)

// The pushback's log line holds the rate and the in-flight limit, +Inf
// when none applies: a JSON logger must get a value it can encode (it
// printed "<internal error: json: unsupported value: +Inf>").
func TestPushbackLogLimitsEncode(t *testing.T) {
	for _, v := range []float64{math.Inf(1), 12.5} {
		out, err := json.Marshal(limitValue(v))
		if err != nil {
			t.Errorf("limit %v: %v", v, err)
			continue
		}
		t.Logf("%v logs as %s", v, out)
	}
	if got := limitValue(math.Inf(1)); got != "none" {
		t.Errorf("no limit logs as %v, want none", got)
	}
}
