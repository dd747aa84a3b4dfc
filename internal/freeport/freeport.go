// Package freeport hands out TCP ports for servers that must be told
// their port before they start (a webhook server the API server is told
// of, a control plane's etcd), in tests and test environments.
//
// A port found by listening on port 0 and closing the listener is in the
// kernel's ephemeral range, where the next listener on port 0 (a metrics
// server started beside the webhook server, say) may be given it again
// before its server binds it: test/deployed's operator once got its
// webhook port for its metrics server and failed to bind the webhook
// server. Port therefore picks below the ephemeral range, which no
// listener on port 0 and no outgoing connection is given, checks that the
// port is free on every interface, and never hands out a port twice in a
// process.
//
// Nor twice on the machine while the process that was given it lives: a
// port is only handed out once Port holds an exclusive lock (flock) on a
// file named after it in a directory of the user's under the temporary
// directory, which it keeps until the process exits. A port is often
// bound seconds after it is chosen (a test environment chooses its
// webhook port, starts a control plane, then the test's manager binds
// it), and test packages run as parallel processes, each choosing ports
// at random among the 8,192 below the ephemeral range: without the lock
// two of them were given one port (a scaffolded project's controller
// tests failed to bind their webhook server that way), as likely as two
// people sharing a birthday in a crowd.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// span is how many ports below the ephemeral range Port searches.
const span = 8192

var (
	mu    sync.Mutex
	given = map[int]bool{}
)

// lockDir is where the port locks are; a variable for tests.
var lockDir = filepath.Join(os.TempDir(), fmt.Sprintf("opkit-freeport-%d", os.Getuid()))

// Port returns a TCP port that is free on every interface now, outside
// the kernel's ephemeral range, and not returned before in this process.
func Port() (int, error) {
	hi := ephemeralLow()
	lo := max(hi-span, 1024)
	n := hi - lo
	mu.Lock()
	defer mu.Unlock()
	start := rand.IntN(n)
	for i := range n {
		p := lo + (start+i)%n
		if given[p] {
			continue
		}
		l, err := net.Listen("tcp", ":"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		if err := l.Close(); err != nil {
			continue
		}
		given[p] = true // taken or ours: not looked at again
		if !reserve(p) {
			continue // another process holds it
		}
		return p, nil
	}
	return 0, fmt.Errorf("freeport: no free port in %d..%d, below the ephemeral range", lo, hi-1)
}

// ephemeralLow returns the lowest port of the kernel's ephemeral range,
// 32768 (Linux's default) where it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if lo, err := strconv.Atoi(f[0]); err == nil && lo > 1024+span/2 {
				return lo
			}
		}
	}
	return 32768
}
