package dashboard_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/dashboard"
	"github.com/sloserve/sloserve/internal/gateway"
	"github.com/sloserve/sloserve/internal/slo"
)

// TestMetricsSourceReadsTheGateway guards against the gateway renaming the metrics that
// MetricsSource reads: a real gateway's registry must yield the model it serves.
func TestMetricsSourceReadsTheGateway(t *testing.T) {
	reg := prometheus.NewRegistry()
	g, err := gateway.New(gateway.Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = g.Close(context.Background()) })
	if err := g.AddModel(gateway.Model{Name: "m", SLO: slo.DefaultSpec(), Policy: batching.NewFixed(4, time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	src, err := dashboard.NewMetricsSource(reg, dashboard.MetricsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	if _, err := src.Sample(t.Context(), t0); err != nil {
		t.Fatal(err)
	}
	got, err := src.Sample(t.Context(), t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Model != "m" || got[0].ArrivalRate != 0 {
		t.Fatalf("samples = %+v; want model m with arrival rate 0", got)
	}
}
