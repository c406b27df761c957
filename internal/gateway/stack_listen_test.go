package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
)

// TestListenBeforeFleet: Listen serves at once while the pods are pending — live 200, ready 503,
// inference 503 with Retry-After — and swaps the gateway in once they are Ready (ready 200,
// requests answered). This is what lets the Deployment's liveness probe pass during a slow
// start (deploy/kustomize/deployment.yaml).
func TestListenBeforeFleet(t *testing.T) {
	worker := httptest.NewServer(fakeWorkerHandler())
	defer worker.Close()
	u, _ := url.Parse(worker.URL)
	port, _ := strconv.Atoi(u.Port())
	const ns = "listen"
	cs := fake.NewClientset()
	kl := startKubelet(cs, ns)
	kl.setHold(true) // pods stay Pending
	defer kl.Stop()
	cfg := kubeStackConfig(ns, port, 2)
	cfg.Gateway.GRPCAddr = "127.0.0.1:0"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	st, err := Listen(ctx, cfg, StackOptions{KubernetesClient: cs})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(context.Background())
	if st.GRPCAddr == "" {
		t.Error("Listen did not open the gRPC listener")
	}
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/v2/health/live", http.StatusOK},
		{"GET", "/v2/health/ready", http.StatusServiceUnavailable},
		{"GET", "/v2/models/m/ready", http.StatusServiceUnavailable},
		{"POST", "/v2/models/m/infer", http.StatusServiceUnavailable},
	} {
		if got := httpStatus(t, c.method, st.URL+c.path); got != c.want {
			t.Errorf("while pending: %s %s = %d, want %d", c.method, c.path, got, c.want)
		}
	}
	select {
	case <-st.Ready():
		t.Fatal("Ready closed while every pod is pending")
	case <-time.After(200 * time.Millisecond):
	}

	kl.setHold(false)
	if err := st.Wait(ctx); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if st.Provider == nil || st.Controller == nil || st.Dashboard == nil {
		t.Fatalf("after Wait: Provider %v, Controller %v, Dashboard %v; want all set", st.Provider, st.Controller, st.Dashboard)
	}
	if got := httpStatus(t, "GET", st.URL+"/v2/health/ready"); got != http.StatusOK {
		t.Errorf("after Wait: ready = %d, want 200", got)
	}
	postOnes(t, st.URL, 2)
}

// TestListenFailedBringUp: a fleet that never comes up makes Wait return the timeout error while
// the server stays live and not ready until Close.
func TestListenFailedBringUp(t *testing.T) {
	cs := fake.NewClientset()
	kl := startKubelet(cs, "ns")
	kl.setHold(true)
	defer kl.Stop()
	cfg := kubeStackConfig("ns", 8000, 1)
	cfg.Provider.Kubernetes.StartTimeout = 200 * time.Millisecond
	st, err := Listen(context.Background(), cfg, StackOptions{KubernetesClient: cs})
	if err != nil {
		t.Fatal(err)
	}
	err = st.Wait(context.Background())
	if want := "not ready within 200ms"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Wait error (-want +got):\n- …%s…\n+ %v", want, err)
	}
	if got := httpStatus(t, "GET", st.URL+"/v2/health/live"); got != http.StatusOK {
		t.Errorf("after the failure: live = %d, want 200", got)
	}
	if got := httpStatus(t, "GET", st.URL+"/v2/health/ready"); got != http.StatusServiceUnavailable {
		t.Errorf("after the failure: ready = %d, want 503", got)
	}
	if _, err := st.Close(context.Background()); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func httpStatus(t *testing.T, method, u string) int {
	t.Helper()
	req, _ := http.NewRequest(method, u, strings.NewReader("{}"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
