package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/opkit-dev/opkit/hack/bench/internal/promtext"
)

// process is one implementation's operator (or the bare client) running as
// a child process.
type process struct {
	cmd         *exec.Cmd
	path        string    // the program's, which cmd may start through a shell (cgroup.start)
	metricsAddr string    // operators: where /metrics is served
	healthAddr  string    // operators: where /readyz is served
	pprofAddr   string    // operators with profiling on: where /debug/pprof is served
	metricsCopy string    // where requests writes what it scraped, if set
	started     time.Time // just before the process started
	ready       time.Time // when its /readyz first passed
	// exited is closed when the process has exited, waitErr then holding
	// what cmd.Wait returned.
	exited  chan struct{}
	waitErr error

	// The bare client's command channel and its last answer.
	stdin    io.WriteCloser
	stdout   *bufio.Scanner
	bareReqs map[string]int64
}

// startOperator starts an operator binary against kubeconfig with the flags
// both operators share, then args.
// With pprof, crmirror serves /debug/pprof on an address of its own, and
// any other operator is assumed to serve it beside /metrics.
func startOperator(bin, kubeconfig string, workers int, args []string, log io.Writer, pprof bool) (*process, error) {
	p, err := newOperator(bin, kubeconfig, workers, args, log, pprof)
	if err != nil {
		return nil, err
	}
	return p, p.start(p.cmd.Start)
}

// newOperator returns the process of startOperator, not started.
func newOperator(bin, kubeconfig string, workers int, args []string, log io.Writer, pprof bool) (*process, error) {
	m, err := freeAddr()
	if err != nil {
		return nil, err
	}
	h, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--kubeconfig", kubeconfig, "--metrics-bind-address", m,
		"--health-probe-bind-address", h, "--max-concurrent-reconciles", strconv.Itoa(workers))
	cmd.Args = append(cmd.Args, args...)
	p := &process{cmd: cmd, path: bin, metricsAddr: m, healthAddr: h}
	if pprof {
		p.pprofAddr = m
		if filepath.Base(bin) == "crmirror" {
			if p.pprofAddr, err = freeAddr(); err != nil {
				return nil, err
			}
			cmd.Args = append(cmd.Args, "--pprof-bind-address", p.pprofAddr)
		}
	}
	cmd.Stdout, cmd.Stderr = log, log
	return p, nil
}

// start starts p's command by calling start (cmd.Start, or a wrapper of
// it), and waits for its exit in the background.
func (p *process) start(start func() error) error {
	p.started = time.Now()
	if err := start(); err != nil {
		return fmt.Errorf("start %s: %w", p.cmd.Path, err)
	}
	p.exited = make(chan struct{})
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	return nil
}

// name is the program's path.
func (p *process) name() string {
	if p.path != "" {
		return p.path
	}
	return p.cmd.Path
}

// hasExited says whether the process has exited.
func (p *process) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// startBare starts the bare client, which writes the copies of w when told.
func startBare(bin, kubeconfig string, workers int, w *workload, log io.Writer) (*process, error) {
	cmd := exec.Command(bin, "--kubeconfig", kubeconfig, "--home", w.home(), "--selector", runLabel+"="+w.run,
		"--max-concurrent-reconciles", strconv.Itoa(workers))
	cmd.Stderr = log
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, stdin: in, stdout: bufio.NewScanner(out), bareReqs: map[string]int64{}}
	return p, p.start(cmd.Start)
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// errExited is the error of a process that exited while it was waited on.
var errExited = errors.New("the process exited")

// waitReady waits until the operator's /readyz passes: its informers have
// synced. The bare client is ready at once.
func (p *process) waitReady(ctx context.Context, timeout time.Duration) error {
	if p.healthAddr == "" {
		return nil
	}
	deadline := time.Now().Add(timeout)
	for {
		// A process thrashing near its memory limit may accept the
		// connection and never answer: no request outlives the deadline
		// by more than a second.
		reqCtx, cancel := context.WithDeadline(ctx, deadline.Add(time.Second))
		req, err := http.NewRequestWithContext(reqCtx, http.MethodGet, "http://"+p.healthAddr+"/readyz", nil)
		if err != nil {
			cancel()
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		cancel()
		last := fmt.Sprint(err)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				p.ready = time.Now()
				return nil
			}
			last = resp.Status
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready within %v (last: %s)", p.name(), timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.exited:
			return fmt.Errorf("%s exited before it was ready: %w", p.name(), errors.Join(p.waitErr, errExited))
		case <-time.After(20 * time.Millisecond): // the resolution of the time to ready
		}
	}
}

// sync tells the bare client to write the copies and waits until it has.
func (p *process) sync() error {
	if _, err := io.WriteString(p.stdin, "sync\n"); err != nil {
		return fmt.Errorf("tell the bare client to sync: %w", err)
	}
	if !p.stdout.Scan() {
		return fmt.Errorf("the bare client stopped: %v", errors.Join(p.stdout.Err(), io.ErrUnexpectedEOF))
	}
	return json.Unmarshal(p.stdout.Bytes(), &p.bareReqs)
}

// requests returns the requests the process has sent the API server so
// far, by HTTP method and by status code: from rest_client_requests_total
// on an operator's /metrics, which both opkit's manager and
// controller-runtime's serve. The bare client counts by method only: it
// stops at the first request that fails.
func (p *process) requests(ctx context.Context) (byMethod, byCode map[string]int64, err error) {
	if p.metricsAddr == "" {
		out := map[string]int64{}
		for k, v := range p.bareReqs {
			out[k] = v
		}
		return out, nil, nil
	}
	body, err := p.scrape(ctx)
	if err != nil {
		return nil, nil, err
	}
	if p.metricsCopy != "" {
		// Kept for a look at the operator's other metrics afterwards.
		_ = os.WriteFile(p.metricsCopy, body, 0o644)
	}
	return parseRequests(bytes.NewReader(body))
}

func (p *process) scrape(ctx context.Context) ([]byte, error) {
	// Bounded, as waitReady's requests are, for a process that answers no more.
	ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.metricsAddr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", p.metricsAddr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", p.metricsAddr, err)
	}
	return body, nil
}

// scrapeTimeout bounds a scrape of /metrics.
const scrapeTimeout = 30 * time.Second

// heapMetric is the heap figure read after sync: the bytes in in-use
// spans, which both operators' Go collectors export (opkit's manager and
// controller-runtime's registry both register one). It counts garbage not
// yet collected alike for both.
const heapMetric = "go_memstats_heap_inuse_bytes"

// heapInuse returns the operator's heapMetric now.
func (p *process) heapInuse(ctx context.Context) (int64, error) {
	body, err := p.scrape(ctx)
	if err != nil {
		return 0, err
	}
	v, err := promtext.Gauge(bytes.NewReader(body), heapMetric)
	if err != nil {
		return 0, fmt.Errorf("read the heap of %s: %w", p.name(), err)
	}
	return int64(v), nil
}

// parseRequests sums rest_client_requests_total by its method label and
// by its code label.
func parseRequests(r io.Reader) (byMethod, byCode map[string]int64, err error) {
	byMethod, byCode = map[string]int64{}, map[string]int64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "rest_client_requests_total{") {
			continue
		}
		labels, value, ok := strings.Cut(line, "} ")
		method, ok2 := label(labels, "method")
		code, ok3 := label(labels, "code")
		if !ok || !ok2 || !ok3 {
			return nil, nil, fmt.Errorf("unexpected metric line %q", line)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return nil, nil, fmt.Errorf("metric line %q: %w", line, err)
		}
		byMethod[method] += int64(v)
		byCode[code] += int64(v)
	}
	return byMethod, byCode, sc.Err()
}

// label returns the value of the label name in a metric's labels.
func label(labels, name string) (string, bool) {
	_, rest, ok := strings.Cut(labels, name+`="`)
	if !ok {
		return "", false
	}
	v, _, ok := strings.Cut(rest, `"`)
	return v, ok
}

// profile writes a CPU profile of the next seconds to prefix.cpu.pprof,
// then a heap profile to prefix.heap.pprof, and reports on the channel
// when it is done.
func (p *process) profile(ctx context.Context, prefix string, seconds int) <-chan error {
	done := make(chan error, 1)
	go func() {
		err := fetch(ctx, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", p.pprofAddr, seconds), prefix+".cpu.pprof")
		if err == nil {
			err = fetch(ctx, "http://"+p.pprofAddr+"/debug/pprof/heap", prefix+".heap.pprof")
		}
		done <- err
	}()
	return done
}

func fetch(ctx context.Context, url, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profile: %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// peakRSS returns the process's peak resident set size (VmHWM) in bytes.
func (p *process) peakRSS() (int64, error) {
	return p.status("VmHWM")
}

// rssFile returns the process's resident file-backed pages (RssFile), in
// bytes: its binary's, mostly.
func (p *process) rssFile() (int64, error) {
	return p.status("RssFile")
}

// status returns the field of /proc/<pid>/status that counts kB, in bytes.
func (p *process) status(field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(v) // "123456 kB"
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/<pid>/status", field)
}

// userHZ is the unit of /proc's CPU times: fixed at 100 a second for
// user space, whatever the kernel's own tick.
const userHZ = 100

// cpuSeconds returns the CPU seconds, user and system, the running
// process has used so far, from /proc/<pid>/stat.
func (p *process) cpuSeconds() (float64, error) {
	path := fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid)
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return parseStatCPU(path, string(b))
}

// parseStatCPU returns utime+stime of a /proc/<pid>/stat line in seconds.
// The command name, in parentheses, may hold spaces: fields count from
// the last ')'.
func parseStatCPU(path, stat string) (float64, error) {
	i := strings.LastIndexByte(stat, ')')
	var f []string
	if i >= 0 {
		f = strings.Fields(stat[i+1:]) // f[0] is field 3, the state
	}
	if len(f) < 13 {
		return 0, fmt.Errorf("read %s: too few fields in %q", path, stat)
	}
	var ticks int64
	for _, v := range f[11:13] { // fields 14 and 15: utime, stime
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("read %s: %w", path, err)
		}
		ticks += n
	}
	return float64(ticks) / userHZ, nil
}

// stop stops the process with SIGTERM (SIGKILL after 30s) and returns the
// CPU seconds it used, user and system, and its peak RSS from rusage.
func (p *process) stop() (cpu float64, maxRSS int64, err error) {
	if p.stdin != nil {
		p.stdin.Close()
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		err = p.waitErr
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		err = errors.Join(errors.New("did not stop within 30s of SIGTERM"), p.waitErr)
	}
	ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, 0, errors.New("no rusage for the process")
	}
	cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	return cpu, ru.Maxrss << 10, err
}
