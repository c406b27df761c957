package local

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/cluster"
	"github.com/sloserve/sloserve/internal/provider"
)

// used returns what c has allocated on each server; nil for a nil cluster.
func used(c *cluster.Cluster) []cluster.Resources {
	if c == nil {
		return nil
	}
	out := make([]cluster.Resources, c.Len())
	for j := range out {
		out[j] = c.Used(j)
	}
	return out
}

func TestLaunchPlacesOnServers(t *testing.T) {
	two := []cluster.Resources{{CPU: 4, GPU: 100}, {CPU: 8}}
	spec := func(cpu, gpu, server int) provider.Spec {
		return provider.Spec{Model: "m", Resources: cluster.Resources{CPU: cpu, GPU: gpu}, Server: server}
	}
	tests := []struct {
		name     string
		servers  []cluster.Resources
		before   []provider.Spec // launched first; each must succeed
		spec     provider.Spec
		wantIs   error  // errors.Is target; nil with wantErr "" means success
		wantErr  string // the error's text; "" means success
		wantUsed []cluster.Resources
	}{
		{name: "fits an empty server", servers: two, spec: spec(2, 50, 0),
			wantUsed: []cluster.Resources{{CPU: 2, GPU: 50}, {}}},
		{name: "fills a server beside another instance", servers: two, before: []provider.Spec{spec(2, 50, 0)}, spec: spec(2, 50, 0),
			wantUsed: []cluster.Resources{{CPU: 4, GPU: 100}, {}}},
		{name: "more CPU than the server has", servers: two, spec: spec(5, 0, 0), wantIs: provider.ErrNoRoom,
			wantErr:  "local launch m on server 0: wants cpu 5 gpu 0, free cpu 4 gpu 100: no room on the server",
			wantUsed: []cluster.Resources{{}, {}}},
		{name: "GPU on a CPU-only server", servers: two, spec: spec(1, 10, 1), wantIs: provider.ErrNoRoom,
			wantErr:  "local launch m on server 1: wants cpu 1 gpu 10, free cpu 8 gpu 0: no room on the server",
			wantUsed: []cluster.Resources{{}, {}}},
		{name: "no room left beside another instance", servers: two, before: []provider.Spec{spec(3, 0, 0)}, spec: spec(2, 0, 0),
			wantIs:   provider.ErrNoRoom,
			wantErr:  "local launch m on server 0: wants cpu 2 gpu 0, free cpu 1 gpu 100: no room on the server",
			wantUsed: []cluster.Resources{{CPU: 3}, {}}},
		{name: "server out of range", servers: two, spec: spec(1, 0, 2),
			wantErr: "local launch m: spec.server 2 out of range [0, 2)", wantUsed: []cluster.Resources{{}, {}}},
		{name: "negative server", servers: two, spec: spec(1, 0, -1),
			wantErr: "local launch m: spec.server -1 out of range [0, 2)", wantUsed: []cluster.Resources{{}, {}}},
		{name: "negative resources", servers: two, spec: spec(-1, 0, 0),
			wantErr: "local launch m: spec.resources must be ≥ 0, got cpu -1 gpu 0", wantUsed: []cluster.Resources{{}, {}}},
		{name: "zero resources are not placed", servers: two, spec: spec(0, 0, 7),
			wantUsed: []cluster.Resources{{}, {}}},
		{name: "no servers: resources are not accounted", spec: spec(1000, 500, 9)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newProvider(t, "ok", Config{Servers: tc.servers})
			ctx := ctxT(t)
			for _, s := range tc.before {
				if _, err := p.Launch(ctx, s); err != nil {
					t.Fatalf("launch %+v before: %v", s, err)
				}
			}
			in, err := p.Launch(ctx, tc.spec)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Launch: %v", err)
			case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
				t.Fatalf("Launch error (-want +got):\n- %s\n+ %v", tc.wantErr, err)
			case tc.wantIs != nil && !errors.Is(err, tc.wantIs):
				t.Errorf("Launch error %v: not errors.Is %v", err, tc.wantIs)
			case tc.wantIs == nil && errors.Is(err, provider.ErrNoRoom):
				t.Errorf("Launch error %v: errors.Is ErrNoRoom, want another error", err)
			}
			if err == nil && in.Spec.Resources != tc.spec.Resources {
				t.Errorf("instance resources (-want +got): -%+v +%+v", tc.spec.Resources, in.Spec.Resources)
			}
			if got := used(p.Cluster()); fmt.Sprint(got) != fmt.Sprint(tc.wantUsed) {
				t.Errorf("Cluster used (-want +got):\n- %v\n+ %v", tc.wantUsed, got)
			}
			wantN := len(tc.before)
			if err == nil {
				wantN++
			}
			if insts, _ := p.Instances(ctx); len(insts) != wantN {
				t.Errorf("instances (-want +got): -%d +%d", wantN, len(insts))
			}
		})
	}
}

// An instance keeps its resources across a crash and restart of its worker and frees them once
// terminated, so that a launch refused for lack of room then fits; Close frees the rest. The
// worker runs with the spec's CPU as --threads, overriding the configured one.
func TestServerResourcesLifecycle(t *testing.T) {
	p := newProvider(t, "ok", Config{Servers: []cluster.Resources{{CPU: 4, GPU: 100}}, Args: []string{"--threads", "7"}})
	ctx := ctxT(t)
	a, err := p.Launch(ctx, provider.Spec{Model: "m", Resources: cluster.Resources{CPU: 2, GPU: 50}})
	if err != nil {
		t.Fatal(err)
	}
	ready, err := p.WaitReady(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	pid := p.pidOf(a.ID)
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	if got, want := strings.Join(args[1:], " "), "worker --addr 127.0.0.1:0 --models m --threads 7 --threads 2"; got != want {
		t.Errorf("worker command line (-want +got):\n- %s\n+ %s", want, got)
	}
	if got := get(t, ready.Addr+"/threads"); got != "2" {
		t.Errorf("threads the worker parsed (-want +got): -2 +%s", got)
	}
	wantUsed := func(step string, want cluster.Resources) {
		t.Helper()
		if got := used(p.Cluster()); len(got) != 1 || got[0] != want {
			t.Errorf("%s: Cluster used (-want +got): -[%v] +%v", step, want, got)
		}
	}
	big := provider.Spec{Model: "m", Resources: cluster.Resources{CPU: 3, GPU: 50}}
	if _, err := p.Launch(ctx, big); !errors.Is(err, provider.ErrNoRoom) {
		t.Fatalf("launch beside the first: got %v, want ErrNoRoom", err)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	deadline := time.Now().Add(15 * time.Second)
	for p.pidOf(a.ID) == pid && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := p.WaitReady(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	wantUsed("after a restart", cluster.Resources{CPU: 2, GPU: 50})
	if err := p.Terminate(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	wantUsed("after Terminate", cluster.Resources{})
	b, err := p.Launch(ctx, big)
	if err != nil {
		t.Fatalf("launch after Terminate: %v", err)
	}
	wantUsed("after the second launch", big.Resources)
	c, err := p.Launch(ctx, provider.Spec{Model: "m", Resources: cluster.Resources{CPU: 1, GPU: 50}})
	if err != nil {
		t.Fatalf("launch filling the server: %v", err)
	}
	wantUsed("server full", cluster.Resources{CPU: 4, GPU: 100})
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	wantUsed("after Close", cluster.Resources{})
	for _, id := range []string{b.ID, c.ID} {
		if err := p.Terminate(ctx, id); !errors.Is(err, provider.ErrNotFound) {
			t.Errorf("Terminate %s after Close: got %v, want ErrNotFound", id, err)
		}
	}
	wantUsed("after Terminate following Close", cluster.Resources{})
}

// Concurrent launches never overbook a server: of eight one-CPU launches on a three-CPU server,
// exactly three succeed.
func TestConcurrentLaunchesNeverOverbook(t *testing.T) {
	p := newProvider(t, "ok", Config{Servers: []cluster.Resources{{CPU: 3}}})
	ctx := ctxT(t)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = p.Launch(ctx, provider.Spec{Model: "m", Resources: cluster.Resources{CPU: 1}})
		}()
	}
	wg.Wait()
	ok, full := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, provider.ErrNoRoom):
			full++
		default:
			t.Errorf("Launch: %v", err)
		}
	}
	if ok != 3 || full != 5 {
		t.Errorf("launches ok/no room (-want +got): -3/5 +%d/%d", ok, full)
	}
	if got := used(p.Cluster()); fmt.Sprint(got) != fmt.Sprint([]cluster.Resources{{CPU: 3}}) {
		t.Errorf("Cluster used (-want +got): -[{3 0}] +%v", got)
	}
}

func TestWorkerArgs(t *testing.T) {
	tests := []struct {
		name  string
		res   cluster.Resources
		extra []string
		want  string
	}{
		{"no resources", cluster.Resources{}, []string{"--runtime", "native"}, "worker --addr 127.0.0.1:0 --models m --runtime native"},
		{"GPU only", cluster.Resources{GPU: 30}, nil, "worker --addr 127.0.0.1:0 --models m"},
		{"threads after the configured args", cluster.Resources{CPU: 4, GPU: 30}, []string{"--runtime", "onnxruntime", "--threads", "1"},
			"worker --addr 127.0.0.1:0 --models m --runtime onnxruntime --threads 1 --threads 4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(workerArgs(provider.Spec{Model: "m", Resources: tc.res}, tc.extra), " ")
			if got != tc.want {
				t.Errorf("workerArgs (-want +got):\n- %s\n+ %s", tc.want, got)
			}
		})
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
