package app

import (
	"context"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sloserve/sloserve/internal/controller"
	"github.com/sloserve/sloserve/internal/dashboard"
	"github.com/sloserve/sloserve/internal/slo"
)

// ControlView is what the dashboard needs from the controller: its latest view of a model
// (forecast, instances by type/tier/state, cost so far). *controller.Controller implements it.
type ControlView interface {
	View(model string) (controller.View, bool)
}

var _ ControlView = (*controller.Controller)(nil)

// Source is the gateway's dashboard.Source: latency percentiles, attainment and batch sizes
// from the gateway's own metrics over a sliding window (dashboard.MetricsSource over the
// registry), and the arrival rate, forecast, instances by type, tier and state and cost so far
// from the controller, which reads the gateway's counters and the provider's fleet every sample.
type Source struct {
	metrics *dashboard.MetricsSource
	ctl     ControlView
}

var _ dashboard.Source = (*Source)(nil)

// NewSource returns the dashboard source of a gateway whose metrics are registered on reg and
// whose fleet ctl controls; spec gives each model's SLO.
func NewSource(reg prometheus.Gatherer, ctl ControlView, spec func(model string) slo.Spec) (*Source, error) {
	ms, err := dashboard.NewMetricsSource(reg, dashboard.MetricsOptions{SLO: spec})
	if err != nil {
		return nil, err
	}
	return &Source{metrics: ms, ctl: ctl}, nil
}

// Sample implements dashboard.Source.
func (s *Source) Sample(ctx context.Context, now time.Time) ([]dashboard.ModelSample, error) {
	out, err := s.metrics.Sample(ctx, now)
	if err != nil {
		return nil, err
	}
	for i := range out {
		m := &out[i]
		v, ok := s.ctl.View(m.Model)
		if !ok {
			continue
		}
		m.ArrivalRate = v.ArrivalRate
		m.Forecast, m.ForecastHorizon = math.NaN(), 0
		if v.HasForecast {
			m.Forecast, m.ForecastHorizon = v.Forecast, v.Horizon
		}
		m.Instances = m.Instances[:0]
		for _, c := range v.Counts {
			m.Instances = append(m.Instances, dashboard.InstanceCount{Type: c.Type, Tier: c.Tier, State: c.State, Count: c.Count})
		}
		m.Cost = slo.CostUSD{Total: v.CostUSD, VM: v.CostUSD}
	}
	return out, nil
}
