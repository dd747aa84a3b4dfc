// Package sharding runs the Mirror sample operator sharded, as real
// processes against a real control plane, while replicas join, leave,
// crash and freeze: no Mirror is ever reconciled by two replicas at once,
// every Mirror converges, and slots move within the bounds.
// docs/sharding.md says what each step shows. It also freezes the leader
// of two replicas run with leader election, on opkit and on
// controller-runtime, and checks that the old leader acts no more once
// the new one has begun (freeze_test.go). And it lets the autoscaler
// scale the replicas, processes following a Deployment's spec.replicas,
// through the same kinds of churn (autoscale_test.go).
package sharding

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	imetrics "github.com/opkit-dev/opkit/internal/metrics"
	"github.com/opkit-dev/opkit/pkg/testenv"
	"github.com/opkit-dev/opkit/test/internal/operators"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	// controller-runtime's client logs through its global logger, and
	// complains with a stack trace if none is set.
	ctrllog.SetLogger(logr.Discard())
	testenv.Main(m, testenv.Options{CRDDirs: []string{"../../config/crd/bases"}}, func(e *testenv.Environment) { env = e })
}

// Lease timings of the churn test: the 4 s / 3 s / 0.5 s, short
// enough for the test, long enough for a replica on a busy two-core
// machine to keep renewing.
const (
	slots         = 16
	leaseDuration = 4 * time.Second
	renewDeadline = 3 * time.Second
	retryPeriod   = 500 * time.Millisecond
)

// buildOperator builds cmd/sample-operator into a temporary directory.
func buildOperator(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sample-operator")
	operators.Build(t, bin, ".", "github.com/opkit-dev/opkit/cmd/sample-operator")
	return bin
}

// replica is one operator process.
type replica = operators.Process

// group is what every replica of the test shares: the binary, the
// kubeconfig, the shard group's name and Lease namespace, and the file
// its reconciles are recorded in.
type group struct {
	bin, kubeconfig, name, namespace, records string
	extra                                     []string // more flags for every replica
}

// start runs a sharded replica named name, with its reconciles recorded
// in g.records.
func (g group) start(t *testing.T, name string) *replica {
	t.Helper()
	args := []string{"--kubeconfig", g.kubeconfig, "-v", "1", "--max-concurrent-reconciles", "4",
		"--webhook-port", "0", "--record-reconciles", g.records,
		"--shard-group", g.name, "--shard-namespace", g.namespace, "--shard-identity", name,
		"--shard-slots", strconv.Itoa(slots), "--shard-lease-duration", leaseDuration.String(),
		"--shard-renew-deadline", renewDeadline.String(), "--shard-retry-period", retryPeriod.String()}
	return operators.Start(t, name, g.bin, append(args, g.extra...)...)
}

// shardStats is what a replica's /metrics says of its membership.
type shardStats struct {
	held, members int
	handovers     int
	lastTakeover  float64
}

// stats scrapes r's imetrics.ShardingSlotsHeld and ShardingMembers, and
// ShardingHandovers and ShardingLastTakeover where it exports them.
func stats(r *replica) (shardStats, error) {
	lines, err := r.Scrape()
	if err != nil {
		return shardStats{}, err
	}
	var s shardStats
	found := 0
	for _, line := range lines {
		name, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(val, 64)
		switch {
		case err != nil:
		case name == imetrics.ShardingSlotsHeld:
			s.held, found = int(v), found+1
		case name == imetrics.ShardingMembers:
			s.members, found = int(v), found+1
		case name == imetrics.ShardingHandovers:
			s.handovers = int(v)
		case name == imetrics.ShardingLastTakeover:
			s.lastTakeover = v
		}
	}
	if found != 2 {
		return s, errors.New("no " + imetrics.ShardingSlotsHeld + " or " + imetrics.ShardingMembers + " yet")
	}
	return s, nil
}

// eventually polls cond every 20ms until it holds, for at most timeout,
// and returns how long it took.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() error) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		err := cond()
		if err == nil {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("%s: not within %v: %v", what, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
