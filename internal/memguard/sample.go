package memguard

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
)

// Sample is one reading of the process's memory and CPU.
type Sample struct {
	// FileBytes is the process's resident memory that the Go runtime
	// does not count: RssFile (the binary's mapped pages) plus RssShmem.
	FileBytes int64
	// ChargedBytes is the memory the process's cgroup is charged for
	// (v2 memory.current, v1 memory.usage_in_bytes): the Go runtime's,
	// page cache (the binary's pages, mapped or read ahead) and kernel
	// memory; 0 when unknown. GoBytes is what the Go runtime has mapped
	// and not released.
	ChargedBytes, GoBytes int64
	// GCSeconds is the CPU the collector used since the start;
	// UsedSeconds all the CPU the process used (the collector's, the
	// program's and the runtime's, not idle time).
	GCSeconds, UsedSeconds float64
	// LiveHeapBytes is the heap the last collection found live, and
	// HeapGoalBytes the heap size at which the next begins: twice the
	// live heap with GOGC's default, less where the memory limit leaves
	// less room; 0 when unknown.
	LiveHeapBytes, HeapGoalBytes int64
	// GOGC is the runtime's GOGC percentage: 100 by default, negative
	// when off.
	GOGC int64
	// LimiterCycle is the last collection in which the runtime's GC CPU
	// limiter was on: the collector wanted more than half the CPU.
	LimiterCycle int64
}

// Reader reads Samples of this process. The zero Reader is ready; it is
// not safe for concurrent use.
type Reader struct {
	metrics []metrics.Sample
	buf     []byte
	found   bool   // usage is known
	usage   string // the cgroup's file of charged memory; "": none
}

// Read returns a Sample of this process.
func (r *Reader) Read() (Sample, error) {
	if r.metrics == nil {
		for _, name := range []string{
			"/cpu/classes/gc/total:cpu-seconds",
			"/cpu/classes/total:cpu-seconds",
			"/cpu/classes/idle:cpu-seconds",
			"/gc/heap/live:bytes",
			"/memory/classes/total:bytes",
			"/memory/classes/heap/released:bytes",
			"/gc/limiter/last-enabled:gc-cycle",
			"/gc/heap/goal:bytes",
			"/gc/gogc:percent",
		} {
			r.metrics = append(r.metrics, metrics.Sample{Name: name})
		}
	}
	metrics.Read(r.metrics)
	f := func(i int) float64 {
		if r.metrics[i].Value.Kind() != metrics.KindFloat64 {
			return 0
		}
		return r.metrics[i].Value.Float64()
	}
	s := Sample{GCSeconds: f(0), UsedSeconds: f(1) - f(2)}
	u := func(i int) int64 {
		if r.metrics[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return int64(r.metrics[i].Value.Uint64())
	}
	s.LiveHeapBytes, s.GoBytes, s.LimiterCycle = u(3), u(4)-u(5), u(6)
	s.HeapGoalBytes, s.GOGC = u(7), u(8)
	if r.metrics[8].Value.Kind() == metrics.KindBad {
		s.GOGC = 100
	}
	s.ChargedBytes = r.charged()
	status, err := readFile("/proc/self/status", r.buf[:0])
	r.buf = status
	if err != nil {
		return s, fmt.Errorf("read the process's resident pages: %w", err)
	}
	if s.FileBytes, err = fileBytes(status); err != nil {
		return s, err
	}
	return s, nil
}

// charged reads the cgroup's charged memory, finding the file on the
// first call; 0 when there is none.
func (r *Reader) charged() int64 {
	if !r.found {
		r.found, r.usage = true, usageFile()
	}
	if r.usage == "" {
		return 0
	}
	b, err := os.ReadFile(r.usage)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// usageFile returns the file that says how much memory this process's
// cgroup is charged for, as /proc/self/cgroup names it under the usual
// mount points (in a container with a cgroup namespace, the cgroup is
// "/"); "" if there is none.
func usageFile() string {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	var candidates []string
	for line := range strings.Lines(string(self)) {
		id, rest, _ := strings.Cut(strings.TrimSpace(line), ":")
		controllers, path, _ := strings.Cut(rest, ":")
		switch {
		case slices.Contains(strings.Split(controllers, ","), "memory"):
			candidates = append(candidates, filepath.Join("/sys/fs/cgroup/memory", path, "memory.usage_in_bytes"))
		case id == "0" && controllers == "":
			candidates = append(candidates, filepath.Join("/sys/fs/cgroup", path, "memory.current"))
		}
	}
	for _, c := range candidates {
		if _, err := os.Stat(c); err == nil {
			return c
		}
	}
	return ""
}

// readFile reads name into buf, reusing it.
func readFile(name string, buf []byte) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return buf, err
	}
	defer f.Close()
	w := bytes.NewBuffer(buf)
	_, err = w.ReadFrom(f)
	return w.Bytes(), err
}

// fileBytes returns RssFile plus RssShmem from the text of
// /proc/<pid>/status, in bytes.
func fileBytes(status []byte) (int64, error) {
	var total int64
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		name, value, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok || (string(name) != "RssFile" && string(name) != "RssShmem") {
			continue
		}
		kib, unit, _ := bytes.Cut(bytes.TrimSpace(value), []byte(" "))
		n, err := strconv.ParseInt(string(kib), 10, 64)
		if err != nil || string(unit) != "kB" {
			return 0, fmt.Errorf("read the process's resident pages: /proc/self/status says %q", sc.Text())
		}
		total += n << 10
		found++
	}
	if found != 2 {
		return 0, fmt.Errorf("read the process's resident pages: /proc/self/status has no RssFile and RssShmem (Linux 4.5 or later has)")
	}
	return total, nil
}
