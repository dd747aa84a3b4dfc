package main

import (
	"net"
	"strings"
	"testing"
	"time"
)

// An operator that accepts /readyz's connection and never answers, as one
// thrashing near its memory limit does, is not ready once the timeout
// passes: waitReady does not wait on the request for ever.
func TestWaitReadyBoundsARequestNoOneAnswers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, unanswered, until the test ends
		}
	}()
	p := &process{path: "silent", healthAddr: l.Addr().String(), exited: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- p.waitReady(t.Context(), 100*time.Millisecond) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not ready within") {
			t.Fatalf("waitReady = %v, want not ready within the timeout", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("waitReady still waits a minute after its 100ms timeout")
	}
}
