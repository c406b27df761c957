package gateway

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"

	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/oipgrpc"
)

// budgetServer serves h through a connection budget on 127.0.0.1, as Start wires it.
func budgetServer(t *testing.T, b *connBudget, h http.Handler) string {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: probeGate(h, time.Second), ConnState: b.connState, ConnContext: connContext,
		ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(b.listen(inner, true, false))
	t.Cleanup(func() { srv.Close() })
	return inner.Addr().String()
}

// dialFrom connects to addr from the loopback address src ("" for the default).
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 2 * time.Second}
	if src != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(src)}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// get sends GET path on c and returns the status, or 0 when the connection is closed instead.
func get(t *testing.T, c net.Conn, br *bufio.Reader, path string) int {
	t.Helper()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return 0
	}
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// closed reports whether the server has closed c (read gives EOF or reset within a second).
func closed(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(time.Second))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errorsAs(err, &ne) && ne.Timeout())
}

func errorsAs(err error, ne *net.Error) bool {
	e, ok := err.(net.Error)
	if ok {
		*ne = e
	}
	return ok
}

func okHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
}

// At the budget, a new connection closes the oldest idle keep-alive connection and is served.
func TestConnBudgetEvictsOldestIdle(t *testing.T) {
	b := newConnBudget(2, 0, 1)
	addr := budgetServer(t, b, okHandler())
	var conns []net.Conn
	var readers []*bufio.Reader
	for i := range 2 {
		c := dialFrom(t, "", addr)
		br := bufio.NewReader(c)
		if code := get(t, c, br, "/v2/models/m"); code != 200 {
			t.Fatalf("filling the budget: status %d", code)
		}
		conns, readers = append(conns, c), append(readers, br)
		waitFor(t, func() bool { // the server marks it idle after the answer
			b.mu.Lock()
			defer b.mu.Unlock()
			n := 0
			for el := b.idle.Front(); el != nil; el = el.Next() {
				if !el.Value.(*budgetConn).fresh {
					n++
				}
			}
			return n == i+1
		})
	}
	c := dialFrom(t, "", addr)
	if code := get(t, c, bufio.NewReader(c), "/v2/models/m"); code != 200 {
		t.Fatalf("new client at the budget (-want +got): -200 +%d", code)
	}
	if !closed(conns[0]) {
		t.Error("the oldest idle connection was not closed")
	}
	if code := get(t, conns[1], readers[1], "/v2/models/m"); code != 200 {
		t.Errorf("the younger idle connection (-want +got): -200 +%d", code)
	}
	if open, probes := b.counts(); open != 2 || probes != 0 {
		t.Errorf("counted (-want +got): -2/0 +%d/%d", open, probes)
	}
	if b.evicted.Load() < 1 {
		t.Errorf("evicted = %d, want ≥ 1", b.evicted.Load())
	}
}

// With every connection busy, a new one gets a probe slot: health probes are answered, other
// requests get 503, and the connection is closed after the answer; beyond the reserve
// connections are closed at once.
func TestConnBudgetProbeReserve(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
		}
		w.Write([]byte("ok"))
	})
	b := newConnBudget(1, 0, 1)
	addr := budgetServer(t, b, h)
	busy := dialFrom(t, "", addr)
	io.WriteString(busy, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	waitFor(t, func() bool { o, _ := b.counts(); return o == 1 })
	time.Sleep(50 * time.Millisecond) // the request is read: the connection is active

	c := dialFrom(t, "", addr)
	if code := get(t, c, bufio.NewReader(c), "/v2/models/m/infer"); code != http.StatusServiceUnavailable {
		t.Errorf("inference on a probe slot (-want +got): -503 +%d", code)
	}
	if !closed(c) {
		t.Error("the probe slot's connection stayed open after its answer")
	}
	waitFor(t, func() bool { _, p := b.counts(); return p == 0 })
	p := dialFrom(t, "", addr)
	if code := get(t, p, bufio.NewReader(p), "/v2/health/ready"); code != 200 {
		t.Errorf("health probe on a probe slot (-want +got): -200 +%d", code)
	}
	waitFor(t, func() bool { _, p := b.counts(); return p == 0 })
	hold := dialFrom(t, "", addr) // takes the only probe slot and sends nothing
	waitFor(t, func() bool { _, p := b.counts(); return p == 1 })
	if x := dialFrom(t, "", addr); !closed(x) {
		t.Error("a connection beyond the budget and the probe reserve was not closed at once")
	}
	_ = hold
}

// A client address at its bound has new connections closed; other addresses are served.
func TestConnBudgetPerClient(t *testing.T) {
	b := newConnBudget(10, 1, 1)
	addr := budgetServer(t, b, okHandler())
	first := dialFrom(t, "127.0.0.1", addr)
	if code := get(t, first, bufio.NewReader(first), "/"); code != 200 {
		t.Fatalf("first connection: %d", code)
	}
	if c := dialFrom(t, "127.0.0.1", addr); !closed(c) {
		t.Error("a second connection from 127.0.0.1 beyond max 1 per client was not closed")
	}
	other := dialFrom(t, "127.0.0.2", addr)
	if code := get(t, other, bufio.NewReader(other), "/"); code != 200 {
		t.Errorf("another client address (-want +got): -200 +%d", code)
	}
}

// A connection that has not sent anything is evictable only after connFreshGrace; a gRPC
// connection is idle while it has no stream.
func TestConnBudgetFreshAndStreams(t *testing.T) {
	b := newConnBudget(1, 0, 0)
	now := time.Unix(1000, 0)
	b.now = func() time.Time { return now }
	pipe := func() net.Conn { a, z := net.Pipe(); t.Cleanup(func() { a.Close(); z.Close() }); return a }
	first := b.admit(pipe(), false, true)
	if first == nil {
		t.Fatal("first connection refused")
	}
	if b.admit(pipe(), false, true) != nil {
		t.Fatal("a new connection evicted one that is still fresh")
	}
	now = now.Add(connFreshGrace)
	second := b.admit(pipe(), false, true)
	if second == nil || !first.released {
		t.Fatal("a connection older than the fresh grace was not evicted")
	}
	h := grpcConnStats{b}
	ctx := context.WithValue(context.Background(), grpcConnKey{}, second)
	h.HandleRPC(ctx, &stats.Begin{})
	now = now.Add(time.Hour)
	if b.admit(pipe(), false, true) != nil {
		t.Fatal("a gRPC connection with a stream open was evicted")
	}
	h.HandleRPC(ctx, &stats.End{})
	if b.admit(pipe(), false, true) == nil || !second.released {
		t.Fatal("a gRPC connection whose streams ended was not evicted")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 3 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The gRPC stats handler finds the counted connection of a real server's RPCs, so that a
// connection with a stream is never evicted as idle.
func TestConnBudgetGRPCStreams(t *testing.T) {
	g := newTestGateway(t, &fakeBackend{}, &fixedPolicy{Max: 1}, time.Second, 16, 1)
	t.Cleanup(func() { g.Close(context.Background()) })
	b := newConnBudget(10, 0, 0)
	srv, err := oipgrpc.NewServer(g, oipgrpc.Options{ServerOptions: []grpc.ServerOption{grpc.StatsHandler(grpcConnStats{b})}})
	if err != nil {
		t.Fatal(err)
	}
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(b.listen(inner, false, true))
	t.Cleanup(srv.Stop)
	c, err := oipgrpc.Dial(inner.Addr().String(), oipgrpc.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.byAddr) != 1 {
		t.Fatalf("gRPC connections known to the stats handler: %d, want 1", len(b.byAddr))
	}
	for _, bc := range b.byAddr {
		if bc.fresh || bc.streams != 0 || bc.el == nil {
			t.Errorf("after one RPC: fresh %v, streams %d, idle %v; want false, 0, true", bc.fresh, bc.streams, bc.el != nil)
		}
	}
}

// Slow clients cannot hold the gateway's connections: a client trickling its headers is cut
// at ReadHeaderTimeout, one trickling its body at ReadTimeout, and oversized headers get 431.
func TestSlowClientsAreCutOff(t *testing.T) {
	g, err := New(Options{Backend: &fakeBackend{}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(context.Background())
	h, err := g.Handler(HandlerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(h, ServerOptions{ReadHeaderTimeout: 200 * time.Millisecond, ReadTimeout: 400 * time.Millisecond,
		WriteTimeout: time.Second, IdleTimeout: time.Second, MaxHeaderBytes: 4 << 10})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	// trickle writes first, then one byte every 50 ms, and returns how long the server kept the
	// connection (until a write fails or a read sees the close).
	trickle := func(first string, each string) time.Duration {
		t.Helper()
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		start := time.Now()
		conn.Write([]byte(first))
		closed := make(chan struct{})
		go func() { io.Copy(io.Discard, conn); close(closed) }()
		for time.Since(start) < 5*time.Second {
			select {
			case <-closed:
				return time.Since(start)
			case <-time.After(50 * time.Millisecond):
			}
			if _, err := conn.Write([]byte(each)); err != nil {
				return time.Since(start)
			}
		}
		return time.Since(start)
	}
	if d := trickle("POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\n", "X-A: b\r\n"); d > 2*time.Second {
		t.Errorf("slow headers held the connection for %v, want cut near the 200 ms read-header timeout", d)
	}
	if d := trickle("POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{", " "); d > 2*time.Second {
		t.Errorf("slow body held the connection for %v, want cut near the 400 ms read timeout", d)
	}
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /v2/health/live HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", bytes.Repeat([]byte("a"), 16<<10))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("oversized headers (-want +got): -431 +%d", resp.StatusCode)
	}
	_ = oip.DefaultLimits
}
