package dashboard

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/slo"
)

// SyntheticModel describes one model of a Synthetic source.
type SyntheticModel struct {
	// Name is the model's name.
	Name string
	// SLO is the model's objective.
	SLO slo.Spec
	// BaseRate is the mean arrival rate, in requests per second; Amplitude the height of its
	// sinusoidal swing, in requests per second; Period the swing's period.
	BaseRate, Amplitude float64
	Period              time.Duration
	// ServiceTime is the service time of a batch of one.
	ServiceTime time.Duration
	// InstanceRPS is the rate one VM instance sustains within the SLO, in requests per second.
	InstanceRPS float64
	// LaunchDelay is how long a VM instance stays launching; Drain how long it drains.
	LaunchDelay, Drain time.Duration
}

// DefaultSyntheticModels returns two models whose load cycles every few minutes, so a ten
// minute window shows scale-out, spill-over to the serverless tier and scale-in.
func DefaultSyntheticModels() []SyntheticModel {
	return []SyntheticModel{
		{
			Name: "mlp256", SLO: slo.Spec{Threshold: 200 * time.Millisecond, Target: 0.98},
			BaseRate: 120, Amplitude: 90, Period: 3 * time.Minute,
			ServiceTime: 12 * time.Millisecond, InstanceRPS: 45,
			LaunchDelay: 15 * time.Second, Drain: 8 * time.Second,
		},
		{
			Name: "logreg", SLO: slo.Spec{Threshold: 50 * time.Millisecond, Target: 0.95},
			BaseRate: 40, Amplitude: 30, Period: 2 * time.Minute,
			ServiceTime: 2 * time.Millisecond, InstanceRPS: 60,
			LaunchDelay: 10 * time.Second, Drain: 5 * time.Second,
		},
	}
}

// Prices of the synthetic fleet (AWS us-east-1 on-demand, as in examples/catalog.yaml) and of
// its serverless tier (per request, all-in for a 2 GB function running ~100 ms).
const (
	syntheticLargeUSDPerHour  = 0.085 // c5.large
	syntheticXLargeUSDPerHour = 0.17  // c5.xlarge
	syntheticServerlessUSD    = 3.5e-6
	syntheticServerlessRPS    = 25.0 // requests per second one warm function absorbs
	syntheticHorizon          = 30 * time.Second
	syntheticCoolDown         = 20 * time.Second
)

// Synthetic is a fake Source driven by a synthetic load: a sinusoidal arrival rate with noise
// and bursts, a forecast that sees 30 s ahead, a toy planner that launches and drains VM
// instances with launch delays, spill-over to a serverless tier, batch sizes that follow load,
// latency that follows utilisation, and cost that accumulates. It exists for the demo and the
// browser test; nothing in it is a policy. It is safe for concurrent use.
type Synthetic struct {
	mu     sync.Mutex
	rng    *rand.Rand
	start  time.Time
	last   time.Time
	models []*synthModel
}

type synthInstance struct {
	typ           string
	units         int // capacity in multiples of InstanceRPS
	usdPerHour    float64
	ready, retire time.Time // ready: end of launch; retire: start of drain (zero: serving)
}

type synthModel struct {
	SyntheticModel
	fleet    []*synthInstance
	batchMax float64
	vmUSD    float64
	slsUSD   float64
	lastP99  time.Duration
	// surplusSince is when the fleet last had more units than wanted (zero: not now).
	surplusSince time.Time
}

var _ Source = (*Synthetic)(nil)

// NewSynthetic returns a Synthetic source over models (DefaultSyntheticModels when none),
// with its pseudo-random noise seeded by seed.
func NewSynthetic(seed uint64, models ...SyntheticModel) *Synthetic {
	if len(models) == 0 {
		models = DefaultSyntheticModels()
	}
	s := &Synthetic{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	for _, m := range models {
		s.models = append(s.models, &synthModel{SyntheticModel: m, batchMax: 8})
	}
	return s
}

// Sample advances the synthetic system to now and reports it. Calls with a now earlier than
// the previous one report the state without advancing.
func (s *Synthetic) Sample(_ context.Context, now time.Time) ([]ModelSample, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.start.IsZero() {
		s.start, s.last = now, now
	}
	dt := now.Sub(s.last)
	if dt < 0 {
		dt = 0
	}
	s.last = now
	out := make([]ModelSample, 0, len(s.models))
	for _, m := range s.models {
		out = append(out, s.step(m, now, dt))
	}
	return out, nil
}

// rate is the noiseless arrival rate at offset t from the start; bursts are left out of what
// the forecaster sees, so they spill over to the serverless tier.
func (m *synthModel) rate(t time.Duration, bursts bool) float64 {
	phase := 2 * math.Pi * t.Seconds() / m.Period.Seconds()
	r := m.BaseRate + m.Amplitude*math.Sin(phase)
	// A short unforecast burst once per period, near the peak.
	if f := math.Mod(t.Seconds(), m.Period.Seconds()) / m.Period.Seconds(); bursts && f > 0.22 && f < 0.26 {
		r += 0.8 * m.Amplitude
	}
	return math.Max(r, 0)
}

func (s *Synthetic) step(m *synthModel, now time.Time, dt time.Duration) ModelSample {
	t := now.Sub(s.start)
	rate := math.Max(0, m.rate(t, true)*(1+0.06*s.rng.NormFloat64()))
	forecast := m.rate(t+syntheticHorizon, false) * (1 + 0.03*s.rng.NormFloat64())

	// Fleet, in capacity units (a c5.xlarge is two): drop drained instances, launch up to the
	// forecast with 15 % headroom, and retire the newest ready instance only when a unit more
	// than needed has been idle for a cool-down, so noise does not churn the fleet.
	live := m.fleet[:0]
	for _, in := range m.fleet {
		if in.retire.IsZero() || now.Sub(in.retire) < m.Drain {
			live = append(live, in)
		}
	}
	m.fleet = live
	units, xlarge := 0, 0
	for _, in := range m.fleet {
		if in.retire.IsZero() {
			units += in.units
			if in.units == 2 {
				xlarge++
			}
		}
	}
	want := max(1, int(math.Ceil(1.15*math.Max(forecast, rate)/m.InstanceRPS)))
	for units < want {
		in := &synthInstance{typ: "c5.large", units: 1, usdPerHour: syntheticLargeUSDPerHour, ready: now.Add(m.LaunchDelay)}
		if xlarge < 2 {
			in.typ, in.units, in.usdPerHour = "c5.xlarge", 2, syntheticXLargeUSDPerHour
			xlarge++
		}
		if t == 0 { // the fleet the run starts with is already up
			in.ready = now
		}
		m.fleet = append(m.fleet, in)
		units += in.units
	}
	if units <= want {
		m.surplusSince = time.Time{}
	} else if m.surplusSince.IsZero() {
		m.surplusSince = now
	}
	for i := len(m.fleet) - 1; i >= 0 && !m.surplusSince.IsZero() && now.Sub(m.surplusSince) >= syntheticCoolDown; i-- {
		if in := m.fleet[i]; in.retire.IsZero() && !now.Before(in.ready) && units-in.units >= want {
			in.retire = now
			units -= in.units
			m.surplusSince = now
		}
	}

	counts := map[[2]string]int{}
	ready := 0.0
	for _, in := range m.fleet {
		state := provider.StateReady
		switch {
		case !in.retire.IsZero():
			state = provider.StateDraining
		case now.Before(in.ready):
			state = provider.StateLaunching
		}
		counts[[2]string{in.typ, string(state)}]++
		if state == provider.StateReady {
			ready += float64(in.units) * m.InstanceRPS
		}
		m.vmUSD += in.usdPerHour * dt.Hours()
	}
	spill := math.Max(0, rate-ready)
	m.slsUSD += spill * dt.Seconds() * syntheticServerlessUSD
	functions := int(math.Ceil(spill / syntheticServerlessRPS))

	// Batches grow with utilisation; the maximum follows an AIMD rule on the last p99.
	u := math.Min(1.5, (rate-spill)/math.Max(ready, 1))
	switch {
	case m.lastP99 > m.SLO.Threshold:
		m.batchMax = math.Max(2, math.Floor(m.batchMax/2))
	case m.lastP99 < m.SLO.Threshold*7/10:
		m.batchMax = math.Min(16, m.batchMax+1)
	}
	batchMean := 1 + (m.batchMax-1)*math.Min(1, u*u)*(0.9+0.1*s.rng.Float64())

	// Latency: service time of the mean batch, queueing that grows near saturation, and cold
	// starts when the serverless tier is used.
	base := float64(m.ServiceTime) * (1 + 0.08*(batchMean-1))
	uu := math.Min(u, 0.95)
	queue := 1 + 0.6*math.Pow(uu, 4)/(1-uu)
	p50 := time.Duration(base * math.Sqrt(queue) * (1 + 0.05*s.rng.NormFloat64()))
	p50 = max(p50, time.Microsecond)
	p95 := time.Duration(base * queue * 1.8)
	p99 := time.Duration(float64(p95) * 1.3)
	vmMiss := math.Min(1, 0.006*math.Exp(2.5*(float64(p99)/float64(m.SLO.Threshold)-1)))
	spilled := spill / math.Max(rate, 1e-9)
	if spilled > 0.01 { // the serverless tier's cold starts reach the tail
		p99 = max(p99, time.Duration(float64(m.SLO.Threshold)*(0.9+spilled)))
	}
	m.lastP99 = p99
	attainment := 1 - (vmMiss*(1-spilled) + 0.3*spilled)

	inst := make([]InstanceCount, 0, len(counts)+1)
	for k, n := range counts {
		inst = append(inst, InstanceCount{Type: k[0], Tier: provider.TierVM, State: provider.State(k[1]), Count: n})
	}
	if functions > 0 {
		inst = append(inst, InstanceCount{Type: "lambda-2gb", Tier: provider.TierServerless, State: provider.StateReady, Count: functions})
	}
	return ModelSample{
		Model:           m.Name,
		SLO:             m.SLO,
		ArrivalRate:     rate,
		Forecast:        forecast,
		ForecastHorizon: syntheticHorizon,
		Instances:       inst,
		BatchMean:       batchMean,
		BatchMax:        m.batchMax,
		Latency:         Latency{P50: p50, P95: p95, P99: p99},
		Attainment:      attainment,
		Cost:            slo.CostUSD{Total: m.vmUSD + m.slsUSD, VM: m.vmUSD, Serverless: m.slsUSD},
	}
}
