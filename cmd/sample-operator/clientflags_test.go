package main

import (
	"io"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

// --kube-api-qps and --kube-api-burst set the config's QPS and Burst,
// which the manager's API budget takes as its rate for every client, and
// no RateLimiter (a second bucket behind the budget's); left out, the
// config's own (none, from manager.Config) stays.
func TestClientFlags(t *testing.T) {
	for _, tt := range []struct {
		args      []string
		qps       float32
		burst     int
		wantError string
	}{
		{nil, -1, 0, ""},
		{[]string{"--kube-api-qps", "5"}, 5, 5, ""},
		{[]string{"--kube-api-qps", "2.5"}, 2.5, 3, ""},
		{[]string{"--kube-api-qps", "5", "--kube-api-burst", "20"}, 5, 20, ""},
		{[]string{"--kube-api-qps", "-1"}, 0, 0, "--kube-api-qps is -1"},
		{[]string{"--kube-api-qps", "NaN"}, 0, 0, "--kube-api-qps is NaN"},
		{[]string{"--kube-api-qps", "5", "--kube-api-burst", "-2"}, 0, 0, "--kube-api-burst is -2"},
		{[]string{"--kube-api-burst", "20"}, 0, 0, "without --kube-api-qps"},
	} {
		f, err := parse(append([]string{"--webhook-port", "0"}, tt.args...), io.Discard)
		if tt.wantError != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantError) {
				t.Errorf("parse(%q) = %v, want an error saying %q", tt.args, err, tt.wantError)
			}
			continue
		}
		if err != nil {
			t.Fatalf("parse(%q): %v", tt.args, err)
		}
		cfg := &rest.Config{QPS: -1}
		f.client.apply(cfg)
		if cfg.QPS != tt.qps || cfg.Burst != tt.burst {
			t.Errorf("%q: QPS %v, Burst %d; want %v, %d", tt.args, cfg.QPS, cfg.Burst, tt.qps, tt.burst)
		}
		if cfg.RateLimiter != nil {
			t.Errorf("%q: a RateLimiter, behind the manager's API budget", tt.args)
		}
	}
}
