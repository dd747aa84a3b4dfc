package main

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// A replica's metrics and health ports are chosen before it binds them.
// A port found by listening on port 0 is in the kernel's ephemeral range,
// where the replicas' and the driver's outgoing connections take ports
// too: eight replicas once failed to start when one of them found its
// health port taken ("bind: address already in use"). freeAddr picks
// below that range, and never the same port twice.
func TestFreeAddrIsBelowTheEphemeralRange(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Skipf("no ephemeral range to check against: %v", err)
	}
	low, err := strconv.Atoi(strings.Fields(string(b))[0])
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for range 20 {
		addr, err := freeAddr()
		if err != nil {
			t.Fatal(err)
		}
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		if p, _ := strconv.Atoi(port); p >= low {
			t.Fatalf("freeAddr() = %s: port %d is in the ephemeral range, from %d", addr, p, low)
		}
		if seen[addr] {
			t.Fatalf("freeAddr() gave %s twice", addr)
		}
		seen[addr] = true
	}
}
