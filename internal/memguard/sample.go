package memguard

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime/metrics"
	"strconv"
)

// Sample is one reading of the process's memory and CPU.
type Sample struct {
	// FileBytes is the process's resident memory that the Go runtime
	// does not count: RssFile (the binary's mapped pages) plus RssShmem.
	FileBytes int64
	// GCSeconds is the CPU the collector used since the start;
	// UsedSeconds all the CPU the process used (the collector's, the
	// program's and the runtime's, not idle time).
	GCSeconds, UsedSeconds float64
	// LiveHeapBytes is the heap the last collection found live.
	LiveHeapBytes int64
}

// Reader reads Samples of this process. The zero Reader is ready; it is
// not safe for concurrent use.
type Reader struct {
	metrics []metrics.Sample
	buf     []byte
}

// Read returns a Sample of this process.
func (r *Reader) Read() (Sample, error) {
	if r.metrics == nil {
		for _, name := range []string{
			"/cpu/classes/gc/total:cpu-seconds",
			"/cpu/classes/total:cpu-seconds",
			"/cpu/classes/idle:cpu-seconds",
			"/gc/heap/live:bytes",
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
	if r.metrics[3].Value.Kind() == metrics.KindUint64 {
		s.LiveHeapBytes = int64(r.metrics[3].Value.Uint64())
	}
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
