package plane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/opkit-dev/opkit/internal/freeport"
)

// process is one running program of the control plane.
type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed once the program has exited
	err  error         // why it exited; read after done is closed
	tail *tailBuffer   // the end of its output
}

// startProcess starts path with args, its output to out, in a process group
// of its own so that a terminal's Ctrl-C reaches the test binary only, which
// then stops the control plane in order.
func startProcess(name, path string, args []string, out io.Writer) (*process, error) {
	cmd := exec.Command(path, args...)
	tail := &tailBuffer{}
	cmd.Stdout = io.MultiWriter(out, tail)
	cmd.Stderr = cmd.Stdout
	cmd.SysProcAttr = processAttributes()
	if err := startCmd(cmd); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{}), tail: tail}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// waitHealthy polls url with client until it answers 200 OK, the process
// exits, or timeout passes.
func (p *process) waitHealthy(client *http.Client, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s answered %s", url, resp.Status)
		}
		last = err
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it was healthy: %v; the end of its output:\n%s", p.name, p.err, p.tail.String())
		case <-ctx.Done():
			return fmt.Errorf("%s not healthy within %v: %w", p.name, timeout, last)
		case <-tick.C:
		}
	}
}

// stop asks the program to end (SIGTERM), and kills it after timeout.
func (p *process) stop(timeout time.Duration) error {
	if p == nil {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	_ = p.resume() // a suspended program acts on SIGTERM only once resumed
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("stop %s: still running %v after SIGTERM; killed it", p.name, timeout)
	}
}

// freePort returns a TCP port on host that nothing listens on now.
// freePort returns a port for a server of the control plane on host,
// which no listener on port 0 will be given before the server binds it
// (internal/freeport).
func freePort(host string) (int, error) {
	p, err := freeport.Port()
	if err != nil {
		return 0, fmt.Errorf("find a free port for %s: %w", host, err)
	}
	return p, nil
}

func hostPort(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }

var errNotStarted = errors.New("control plane not started")

// tailBuffer keeps the last lines written to it, so that a program that
// fails to start can be explained without its whole log.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 2048

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*tailSize {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailSize:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf[max(0, len(t.buf)-tailSize):])
}
