package freeport

import (
	"net"
	"strconv"
	"testing"
)

// The ports are below the ephemeral range, so that a listener on port 0
// is never given one before its server binds it (test/deployed's operator
// once got its webhook port for its metrics server: a port found by
// listening on port 0 is in that range, seen failing), free, and never
// the same twice.
func TestPortsAreOutsideTheEphemeralRangeAndDistinct(t *testing.T) {
	lo := ephemeralLow()
	seen := map[int]bool{}
	for range 50 {
		p, err := Port()
		if err != nil {
			t.Fatal(err)
		}
		if p >= lo || p < 1024 {
			t.Fatalf("Port() = %d, want below the ephemeral range's %d and above 1023", p, lo)
		}
		if seen[p] {
			t.Fatalf("Port() = %d twice", p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", ":"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("Port() = %d, which cannot be bound: %v", p, err)
		}
		l.Close()
	}
}

// A port taken on any interface is skipped.
func TestPortSkipsTakenPorts(t *testing.T) {
	lo := ephemeralLow()
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	taken := map[int]bool{}
	for p := max(lo-span, 1024); p < lo && len(held) < 200; p += 7 {
		if l, err := net.Listen("tcp", ":"+strconv.Itoa(p)); err == nil {
			held = append(held, l)
			taken[p] = true
		}
	}
	for range 100 {
		p, err := Port()
		if err != nil {
			t.Fatal(err)
		}
		if taken[p] {
			t.Fatalf("Port() = %d, which a listener holds", p)
		}
	}
}
