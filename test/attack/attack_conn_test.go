package attack

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/sloserve/sloserve/internal/oipgrpc/inferencepb"
)

// flood opens n connections to addr from the loopback addresses prefix+1 … prefix+ips, spread
// evenly (the gateway's per-client bound is 1024), each prepared by hello; a connection the
// gateway closes is closed here too. It returns how many were established.
func flood(t *testing.T, addr string, n int, prefix string, ips int, hello func(net.Conn) error) int64 {
	t.Helper()
	var ok atomic.Int64
	next := make(chan int)
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(fmt.Sprintf("%s%d", prefix, 1+i%ips))}}
				c, err := d.Dial("tcp", addr)
				if err != nil {
					continue
				}
				c.SetDeadline(time.Now().Add(5 * time.Second))
				if err := hello(c); err != nil {
					c.Close()
					continue
				}
				c.SetDeadline(time.Time{})
				ok.Add(1)
				go func() { io.Copy(io.Discard, c); c.Close() }() // idle until the gateway closes it
			}
		}()
	}
	deadline := time.Now().Add(90 * time.Second)
	for i := range n {
		if time.Now().After(deadline) {
			t.Logf("flood of %s stopped after 90 s at %d connections", addr, i)
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return ok.Load()
}

// restHello makes a keep-alive request, leaving the connection idle.
func restHello(c net.Conn) error {
	if _, err := io.WriteString(c, "GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return err
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, res.Body)
	return res.Body.Close()
}

// grpcHello sends the HTTP/2 client preface and an empty SETTINGS frame: a gRPC connection
// with no stream, as an idle client's.
func grpcHello(c net.Conn) error {
	_, err := io.WriteString(c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
	return err
}

// TestIdleFlood: 5,000 idle REST keep-alive connections plus 20,000 idle gRPC connections.
// A normal client (REST inference, gRPC ServerReady, each on a new connection) and the health
// probes must still be answered within 100 ms, and the gateway's descriptors must stay under
// its limit.
func TestIdleFlood(t *testing.T) {
	bin := needAttack(t)
	// The client closes each connection the gateway closes, so it holds about as many as the
	// gateway's budget, not all 25,000.
	if got := raiseFiles(t, 65536); got < 12000 {
		t.Skipf("the client side needs ~12,000 descriptors; the open-files limit is %d", got)
	}
	g := startGateway(t, bin, "  max_connections: 5000\n  max_connections_per_client: 1024")
	host := g.url[len("http://"):]
	start := time.Now()
	rest := flood(t, host, 5000, "127.0.1.", 5, restHello)
	restFDs := fds(g.pid)
	grpcN := flood(t, g.grpc, 20000, "127.0.2.", 25, grpcHello)
	t.Logf("flood: %d idle REST then %d idle gRPC connections opened in %v; gateway fds after the REST flood %d; %s",
		rest, grpcN, time.Since(start).Round(time.Millisecond), restFDs, connMetrics(t, g.url))
	// The kernel's accept queue may still hold flood connections the gateway has not accepted
	// (and evicted idle ones for) yet: the flood is idle once the eviction count stops moving.
	settle := time.Now()
	for last := ""; time.Since(settle) < 30*time.Second; {
		time.Sleep(500 * time.Millisecond)
		m := connMetrics(t, g.url)
		if m == last {
			break
		}
		last = m
	}
	t.Logf("accept queue drained %v after the flood", time.Since(settle).Round(100*time.Millisecond))
	time.Sleep(1500 * time.Millisecond) // every flood connection is past the 1 s fresh grace: idle

	body := g.inferBody()
	client := func(src string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	}
	measure := func(do func() (int, error)) (time.Duration, int, error) {
		t0 := time.Now()
		code, err := do()
		return time.Since(t0), code, err
	}
	kinds := []string{"GET /v2/health/live", "GET /v2/health/ready", "POST /v2/models/logreg/infer", "gRPC ServerReady"}
	lat := map[string][]time.Duration{}
	maxFDs := 0
	const rounds = 20
	for i := range rounds {
		hc := client(fmt.Sprintf("127.0.3.%d", 1+i))
		for _, k := range kinds {
			d, code, err := measure(func() (int, error) {
				switch k {
				case "GET /v2/health/live", "GET /v2/health/ready":
					res, err := hc.Get(g.url + k[len("GET "):])
					if err != nil {
						return 0, err
					}
					io.Copy(io.Discard, res.Body)
					res.Body.Close()
					return res.StatusCode, nil
				case "POST /v2/models/logreg/infer":
					res, err := hc.Post(g.url+"/v2/models/logreg/infer", "application/json", bytes.NewReader(body))
					if err != nil {
						return 0, err
					}
					io.Copy(io.Discard, res.Body)
					res.Body.Close()
					return res.StatusCode, nil
				}
				cc, err := grpc.NewClient(g.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
				if err != nil {
					return 0, err
				}
				defer cc.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				r, err := pb.NewGRPCInferenceServiceClient(cc).ServerReady(ctx, &pb.ServerReadyRequest{})
				if err != nil || !r.GetReady() {
					return 0, err
				}
				return 200, nil
			})
			if err != nil || code != http.StatusOK {
				t.Errorf("round %d: %s: status %d, err %v", i, k, code, err)
			}
			lat[k] = append(lat[k], d)
		}
		maxFDs = max(maxFDs, fds(g.pid))
	}
	limit := fileLimit(g.pid)
	t.Logf("gateway: %d descriptors at most (limit %d), RSS %.0f MiB; %s", maxFDs, limit, rssMB(g.pid), connMetrics(t, g.url))
	for _, k := range kinds {
		ds := lat[k]
		slices.Sort(ds)
		t.Logf("%-30s median %6.2f ms  max %6.2f ms  (%d new connections under the flood)", k,
			ms(ds[len(ds)/2]), ms(ds[len(ds)-1]), len(ds))
		if ds[len(ds)-1] > 100*time.Millisecond {
			t.Errorf("%s: slowest answer %v under the idle flood, want ≤ 100 ms", k, ds[len(ds)-1])
		}
	}
	if maxFDs >= limit || maxFDs > 5000+16+1024 {
		t.Errorf("gateway descriptors %d: want under the limit %d and near max_connections 5000", maxFDs, limit)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// connMetrics returns the gateway's connection-budget metrics as one line.
func connMetrics(t *testing.T, url string) string {
	t.Helper()
	res, err := http.Get(url + "/metrics")
	if err != nil {
		return err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "sloserve_client_connections") {
			out = append(out, line)
		}
	}
	return strings.Join(out, ", ")
}
