package faults

import (
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// proxy is a loopback TCP proxy to the API server that can cut
// connections. TLS passes through it untouched.
type proxy struct {
	ln       net.Listener
	upstream string

	cutting  atomic.Bool
	blackout atomic.Bool // refuse every connection
	accepted atomic.Int64
	cut      atomic.Int64 // connections refused or closed by the proxy

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// startProxy proxies to the API server until the test ends.
func startProxy(t *testing.T) *proxy {
	t.Helper()
	u, err := url.Parse(env.Config().Host)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, upstream: u.Host, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		ln.Close()
		p.closeAll(1)
		p.wg.Wait()
	})
	return p
}

// config returns the admin config with the proxy as the API server. The
// server's certificate names 127.0.0.1, which the proxy listens on too.
func (p *proxy) config() *rest.Config {
	cfg := env.Config()
	cfg.Host = "https://" + p.ln.Addr().String()
	return cfg
}

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		if p.blackout.Load() || p.cutting.Load() && rand.IntN(2) == 0 {
			p.cut.Add(1)
			c.Close()
			continue
		}
		up, err := net.DialTimeout("tcp", p.upstream, 5*time.Second)
		if err != nil {
			c.Close()
			continue
		}
		p.track(c) // the client side: closing it ends the pair
		p.wg.Go(func() { p.pipe(c, up) })
		p.wg.Go(func() { p.pipe(up, c) })
	}
}

func (p *proxy) track(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
}

// pipe copies from src to dst; when either side ends, both are closed.
func (p *proxy) pipe(dst, src net.Conn) {
	_, err := io.Copy(dst, src)
	_ = err // a cut or a close: either way the pair is done
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
	dst.Close()
	src.Close()
}

// closeAll closes each open connection with probability frac.
func (p *proxy) closeAll(frac float64) int {
	p.mu.Lock()
	var victims []net.Conn
	for c := range p.conns {
		if rand.Float64() < frac {
			victims = append(victims, c)
		}
	}
	p.mu.Unlock()
	for _, c := range victims {
		c.Close()
	}
	return len(victims)
}

// cutFor drops connections at random for d: half the new ones are closed
// at once, and every 100-300ms each open one is closed with probability
// 1/2. It returns when d has passed.
func (p *proxy) cutFor(d time.Duration) {
	p.cutting.Store(true)
	defer p.cutting.Store(false)
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		p.cut.Add(int64(p.closeAll(0.5)))
		time.Sleep(time.Duration(100+rand.IntN(200)) * time.Millisecond)
	}
}

// blackoutFor refuses every connection, and closes every open one, for d.
func (p *proxy) blackoutFor(d time.Duration) {
	p.blackout.Store(true)
	defer p.blackout.Store(false)
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		p.cut.Add(int64(p.closeAll(1)))
		time.Sleep(50 * time.Millisecond)
	}
}
