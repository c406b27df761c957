package gateway

import (
	"container/list"
	"context"
	"crypto/tls"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/stats"

	"github.com/sloserve/sloserve/internal/oip"
)

// One budget of client connections covers every listener of the gateway (REST and gRPC), so
// that no listener can take the descriptors another one (or the worker connections) needs:
//
//	accept ─▶ per-client cap reached?           ─▶ closed at once
//	       ─▶ budget full? ─▶ close the oldest idle connection (REST keep-alive between
//	                          requests, gRPC with no stream, or a new one older than
//	                          connFreshGrace that has not sent a request yet) and take its slot
//	                       ─▶ none idle: REST takes a probe slot (health probes only, then
//	                          closed) while connProbeReserve allows; else closed at once
//
// A connection that is refused is closed immediately rather than left in the kernel's accept
// queue, where it would hold a descriptor on the client and make health probes wait.

// connProbeReserve is the number of REST connections admitted beyond the budget when nothing
// can be evicted, each for one health probe (/v2/health/*, /ping).
const connProbeReserve = 16

// connFreshGrace is how long a new connection may stay without a request (REST) or stream
// (gRPC) before it counts as idle and can be evicted to make room.
const connFreshGrace = time.Second

// connEvictScan bounds how many idle-list entries an admission looks at for one to evict.
const connEvictScan = 8

// connBudget counts the gateway's client connections. All methods are safe for concurrent use:
// the listeners' accept loops, http.Server's ConnState hook and the gRPC stats handler call it.
type connBudget struct {
	max, perClient, reserve int
	now                     func() time.Time

	mu     sync.Mutex
	open   int // admitted, probe slots included
	probes int // in probe slots
	byIP   map[string]int
	idle   *list.List             // of *budgetConn, oldest first
	byAddr map[string]*budgetConn // gRPC connections by local|remote address, for the stats handler

	accepted, evicted, refused atomic.Int64
}

// newConnBudget returns a budget of max connections (> 0), at most perClient (0: no bound) from
// one remote IP address, and reserve probe slots for REST health probes.
func newConnBudget(max, perClient, reserve int) *connBudget {
	return &connBudget{max: max, perClient: perClient, reserve: reserve, now: time.Now,
		byIP: map[string]int{}, idle: list.New(), byAddr: map[string]*budgetConn{}}
}

// budgetConn is an admitted connection; Close releases its slot once.
type budgetConn struct {
	net.Conn
	b     *connBudget
	ip    string
	key   string // byAddr key for gRPC, else ""
	probe bool   // admitted into a probe slot: serves one health probe

	// guarded by b.mu
	el       *list.Element // on b.idle when evictable
	since    time.Time     // when it joined b.idle
	fresh    bool          // never had a request or stream yet
	streams  int           // gRPC streams open
	released bool
}

// Close closes the connection and releases its slot.
func (c *budgetConn) Close() error {
	err := c.Conn.Close()
	c.b.release(c)
	return err
}

// listen wraps l so that its connections are counted; probes says whether the listener serves
// health probes in probe slots (the REST one); grpcConns makes the connections known to the
// gRPC stats handler (statsHandler).
func (b *connBudget) listen(l net.Listener, probes, grpcConns bool) net.Listener {
	return &budgetListener{Listener: l, b: b, probes: probes, grpc: grpcConns}
}

type budgetListener struct {
	net.Listener
	b            *connBudget
	probes, grpc bool
}

// Accept returns the next admitted connection; refused ones are closed here.
func (l *budgetListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if bc := l.b.admit(c, l.probes, l.grpc); bc != nil {
			return bc, nil
		}
		c.Close()
	}
}

func remoteIP(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

func addrKey(local, remote net.Addr) string { return local.String() + "|" + remote.String() }

// admit counts c, evicting an idle connection when the budget is full; nil means refused.
func (b *connBudget) admit(c net.Conn, probes, grpcConn bool) *budgetConn {
	bc := &budgetConn{Conn: c, b: b, ip: remoteIP(c.RemoteAddr()), fresh: true}
	now := b.now()
	var victim *budgetConn
	b.mu.Lock()
	if b.perClient > 0 && b.byIP[bc.ip] >= b.perClient {
		b.mu.Unlock()
		b.refused.Add(1)
		return nil
	}
	if b.open-b.probes >= b.max {
		victim = b.evictableLocked(now)
		switch {
		case victim != nil:
			b.releaseLocked(victim)
		case probes && b.probes < b.reserve:
			bc.probe = true
		default:
			b.mu.Unlock()
			b.refused.Add(1)
			return nil
		}
	}
	b.open++
	b.byIP[bc.ip]++
	if bc.probe {
		b.probes++
	} else {
		bc.since = now
		bc.el = b.idle.PushBack(bc)
	}
	if grpcConn {
		bc.key = addrKey(c.LocalAddr(), c.RemoteAddr())
		b.byAddr[bc.key] = bc
	}
	b.mu.Unlock()
	b.accepted.Add(1)
	if victim != nil {
		b.evicted.Add(1)
		victim.Conn.Close() // its server goroutine sees the error and calls Close: released already
	}
	return bc
}

// evictableLocked returns the oldest idle connection that may be closed, or nil.
func (b *connBudget) evictableLocked(now time.Time) *budgetConn {
	el := b.idle.Front()
	for i := 0; el != nil && i < connEvictScan; i, el = i+1, el.Next() {
		c := el.Value.(*budgetConn)
		if !c.fresh || now.Sub(c.since) >= connFreshGrace {
			return c
		}
	}
	return nil
}

func (b *connBudget) release(c *budgetConn) {
	b.mu.Lock()
	b.releaseLocked(c)
	b.mu.Unlock()
}

func (b *connBudget) releaseLocked(c *budgetConn) {
	if c.released {
		return
	}
	c.released = true
	b.open--
	if c.probe {
		b.probes--
	}
	if b.byIP[c.ip]--; b.byIP[c.ip] <= 0 {
		delete(b.byIP, c.ip)
	}
	if c.el != nil {
		b.idle.Remove(c.el)
		c.el = nil
	}
	if c.key != "" {
		delete(b.byAddr, c.key)
	}
}

// busy takes c off the idle list; idle puts it at the back.
func (b *connBudget) busy(c *budgetConn) {
	b.mu.Lock()
	c.fresh = false
	if c.el != nil {
		b.idle.Remove(c.el)
		c.el = nil
	}
	b.mu.Unlock()
}

func (b *connBudget) setIdle(c *budgetConn) {
	b.mu.Lock()
	if !c.released && !c.probe && c.el == nil {
		c.since = b.now()
		c.el = b.idle.PushBack(c)
	}
	b.mu.Unlock()
}

// counts returns the admitted connections and those in probe slots.
func (b *connBudget) counts() (open, probes int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.open, b.probes
}

// budgetConnOf returns the counted connection under c (unwrapping TLS), or nil.
func budgetConnOf(c net.Conn) *budgetConn {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	bc, _ := c.(*budgetConn)
	return bc
}

// connState is the REST server's http.Server.ConnState hook: a keep-alive connection between
// requests is idle; a hijacked one is never evicted.
func (b *connBudget) connState(c net.Conn, s http.ConnState) {
	bc := budgetConnOf(c)
	if bc == nil {
		return
	}
	switch s {
	case http.StateActive, http.StateHijacked:
		b.busy(bc)
	case http.StateIdle:
		b.setIdle(bc)
	}
}

type connCtxKey struct{}

// connContext is the REST server's http.Server.ConnContext hook: it keeps the counted
// connection in the requests' context for probeGate.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if bc := budgetConnOf(c); bc != nil {
		return context.WithValue(ctx, connCtxKey{}, bc)
	}
	return ctx
}

// isProbePath reports whether path is a health probe served in probe slots.
func isProbePath(path string) bool {
	return strings.HasPrefix(path, "/v2/health/") || path == "/ping"
}

// probeGate serves, on a connection admitted into a probe slot, health probes only (others get
// 503) and closes the connection after the answer.
func probeGate(next http.Handler, retryAfter time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bc, _ := r.Context().Value(connCtxKey{}).(*budgetConn)
		if bc == nil || !bc.probe {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Connection", "close")
		if isProbePath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Retry-After", strconv.FormatInt(max(1, int64(math.Ceil(retryAfter.Seconds()))), 10))
		writeEnsembleJSON(w, http.StatusServiceUnavailable, oip.ErrorResponse{Error: "gateway: connection budget exhausted; only health probes are served on this connection"})
	})
}

// statsHandler tells the budget which gRPC connections have streams open: a connection with
// none is idle.
type grpcConnStats struct{ b *connBudget }

var _ stats.Handler = grpcConnStats{}

type grpcConnKey struct{}

func (h grpcConnStats) TagConn(ctx context.Context, info *stats.ConnTagInfo) context.Context {
	h.b.mu.Lock()
	bc := h.b.byAddr[addrKey(info.LocalAddr, info.RemoteAddr)]
	h.b.mu.Unlock()
	if bc == nil {
		return ctx
	}
	return context.WithValue(ctx, grpcConnKey{}, bc)
}

func (h grpcConnStats) HandleConn(context.Context, stats.ConnStats) {}

func (h grpcConnStats) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

func (h grpcConnStats) HandleRPC(ctx context.Context, s stats.RPCStats) {
	bc, _ := ctx.Value(grpcConnKey{}).(*budgetConn)
	if bc == nil {
		return
	}
	switch s.(type) {
	case *stats.Begin:
		h.b.mu.Lock()
		bc.streams++
		bc.fresh = false
		if bc.el != nil {
			h.b.idle.Remove(bc.el)
			bc.el = nil
		}
		h.b.mu.Unlock()
	case *stats.End:
		h.b.mu.Lock()
		if bc.streams--; bc.streams <= 0 && !bc.released && bc.el == nil {
			bc.streams = 0
			bc.since = h.b.now()
			bc.el = h.b.idle.PushBack(bc)
		}
		h.b.mu.Unlock()
	}
}

// registerConnMetrics registers the budget's gauges and counters on reg.
func registerConnMetrics(reg prometheus.Registerer, b *connBudget) error {
	open := func() float64 { n, _ := b.counts(); return float64(n) }
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sloserve_client_connections",
			Help: "Open client connections (REST and gRPC) counted against gateway.max_connections."}, open),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "sloserve_client_connections_evicted_total",
			Help: "Idle client connections closed to make room for a new one."}, func() float64 { return float64(b.evicted.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "sloserve_client_connections_refused_total",
			Help: "Client connections closed at accept: budget or per-client bound reached."}, func() float64 { return float64(b.refused.Load()) }),
	} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register connection metrics: %w", err)
		}
	}
	return nil
}
