package main

import (
	"errors"
	"fmt"
	"net"
	"strconv"
)

// listener is an address the operator will listen on and the flag that
// sets it.
type listener struct{ flag, addr string }

// localListeners are the addresses the operator will listen on with
// --local: metrics and probes unless turned off ("0"), and the webhook
// server on 127.0.0.1 when its port is given.
func localListeners(f flags) []listener {
	var ls []listener
	for _, l := range []listener{{"metrics-bind-address", f.metricsAddr}, {"health-probe-bind-address", f.healthAddr}} {
		if l.addr != "0" {
			ls = append(ls, l)
		}
	}
	if f.webhook.port > 0 {
		ls = append(ls, listener{"webhook-port", net.JoinHostPort("127.0.0.1", strconv.Itoa(f.webhook.port))})
	}
	return ls
}

// checkFree listens on each address and closes it at once, so that 'make
// run' refuses a taken port before it starts a control plane and the
// samples, not after. It returns an error naming each flag to change.
// The port may still be taken between the check and the operator's
// listen: that fails as before, only later.
func checkFree(ls []listener) error {
	var errs []error
	for _, l := range ls {
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			errs = append(errs, fmt.Errorf("--%s: %w; choose another with --%s (for make run, in the Makefile variable RUN_FLAGS)", l.flag, err, l.flag))
			continue
		}
		if err := ln.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("nothing started: %w", err)
	}
	return nil
}
