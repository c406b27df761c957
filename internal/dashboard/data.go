package dashboard

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/slo"
)

// Num is a float64 that encodes NaN and ±Inf as JSON null (a gap in a chart).
type Num float64

// MarshalJSON writes the number, or null when it is not finite.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

// UnmarshalJSON reads a number, or null as NaN.
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Num(math.NaN())
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return err
	}
	*n = Num(f)
	return nil
}

// Column is one series of a chart, encoded as one JSON array in a single pass (a per-value
// MarshalJSON costs an allocation and a validation per point). Values keep 7 significant
// digits, plenty for a chart and a third of the bytes of full precision.
type Column []Num

// MarshalJSON writes the column as an array of numbers and nulls.
func (c Column) MarshalJSON() ([]byte, error) {
	if c == nil {
		return []byte("null"), nil
	}
	b := make([]byte, 0, 2+len(c)*9)
	b = append(b, '[')
	for i, n := range c {
		if i > 0 {
			b = append(b, ',')
		}
		f := float64(n)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			b = append(b, "null"...)
			continue
		}
		b = strconv.AppendFloat(b, f, 'g', 7, 64)
	}
	return append(b, ']'), nil
}

// Data is the JSON body of the data endpoint (Options.Path+"/data"): the ring as columns. Every
// series of every model has one element per entry of TimesMS, null where the model was absent
// or the value unknown.
type Data struct {
	// Title is Options.Title.
	Title string `json:"title"`
	// IntervalS is the sampling period, in seconds; RefreshS the page's polling period.
	IntervalS float64 `json:"interval_s"`
	RefreshS  float64 `json:"refresh_s"`
	// Capacity is the ring size, in snapshots.
	Capacity int `json:"capacity"`
	// TimesMS are the sampling instants, in Unix milliseconds, oldest first.
	TimesMS []int64 `json:"t_ms"`
	// SourceErrors counts failed samples so far; LastError is the latest failure, "" once a
	// sample succeeded again.
	SourceErrors int64  `json:"source_errors"`
	LastError    string `json:"last_error"`
	// Models holds one entry per model seen in the ring, by name.
	Models []ModelSeries `json:"models"`
	// Overview has one row per model of Models, in the same order: its latest sample in a
	// few numbers, for the table at the top of the page.
	Overview []ModelOverview `json:"overview"`
}

// OverviewState is a model's state in the overview table.
type OverviewState string

// The states of a model's latest sample, in the order the page sorts them.
const (
	// StateViolating: the window's attainment is below the SLO target.
	StateViolating OverviewState = "violating"
	// StateOK: the window's attainment meets the SLO target.
	StateOK OverviewState = "ok"
	// StateIdle: no request completed in the window (attainment unknown, not 0).
	StateIdle OverviewState = "idle"
	// StateAbsent: the model was not in the latest sample (removed, or its source lost it).
	StateAbsent OverviewState = "absent"
)

// ModelOverview is one model's latest sample: what a glance at a 16-model fleet needs.
type ModelOverview struct {
	// Name is the model's name.
	Name string `json:"name"`
	// State is violating, ok, idle or absent.
	State OverviewState `json:"state"`
	// ArrivalRPS is the arrival rate, in requests/s; null when unknown.
	ArrivalRPS Num `json:"arrival_rps"`
	// P99MS is the window's 99th-percentile latency, in milliseconds; null when idle.
	P99MS Num `json:"p99_ms"`
	// Attainment is the window's fraction within the SLO, in [0, 1]; null when idle.
	Attainment Num `json:"attainment"`
	// Ready and Instances count the ready instances and all live ones (every state).
	Ready     int `json:"ready"`
	Instances int `json:"instances"`
	// SLO is the model's objective.
	SLO slo.SpecJSON `json:"slo"`
}

// ModelSeries is one model's columns.
type ModelSeries struct {
	// Name is the model's name.
	Name string `json:"name"`
	// SLO is the model's latest objective.
	SLO slo.SpecJSON `json:"slo"`
	// ArrivalRPS and ForecastRPS are the observed and forecast arrival rates, in requests/s.
	ArrivalRPS  Column `json:"arrival_rps"`
	ForecastRPS Column `json:"forecast_rps"`
	// ForecastHorizonS is the latest ForecastHorizon, in seconds: ForecastRPS[i] predicts the
	// rate at TimesMS[i] + ForecastHorizonS.
	ForecastHorizonS float64 `json:"forecast_horizon_s"`
	// Instances has one series per (type, tier, state) seen, sorted by tier (vm first), type and state (lifecycle order).
	Instances []InstanceSeries `json:"instances"`
	// BatchMean and BatchMax are the mean and current maximum batch sizes, in requests.
	BatchMean Column `json:"batch_mean"`
	BatchMax  Column `json:"batch_max"`
	// LatencyMS holds the latency percentiles, in milliseconds.
	LatencyMS LatencySeries `json:"latency_ms"`
	// Attainment is the fraction of requests within the SLO threshold, in [0, 1].
	Attainment Column `json:"attainment"`
	// CostUSD is the cumulative cost by tier, in US dollars.
	CostUSD CostSeries `json:"cost_usd"`
}

// InstanceSeries counts a model's instances of one type, tier and state over time.
type InstanceSeries struct {
	Type  string         `json:"type"`
	Tier  provider.Tier  `json:"tier"`
	State provider.State `json:"state"`
	// Count is 0 where the model was sampled without such instances, null where it was absent.
	Count Column `json:"count"`
}

// LatencySeries holds percentile columns, in milliseconds.
type LatencySeries struct {
	P50 Column `json:"p50"`
	P95 Column `json:"p95"`
	P99 Column `json:"p99"`
}

// CostSeries holds cumulative cost columns, in US dollars.
type CostSeries struct {
	Total      Column `json:"total"`
	VM         Column `json:"vm"`
	Serverless Column `json:"serverless"`
}

// instanceKey identifies one instance series.
type instanceKey struct {
	tier  provider.Tier
	typ   string
	state provider.State
}

// stateOrder stacks states in lifecycle order.
var stateOrder = map[provider.State]int{
	provider.StateReady: 0, provider.StateLaunching: 1, provider.StateDraining: 2, provider.StateInterrupted: 3,
}

// tierOrder stacks the VM fleet under the serverless tier.
var tierOrder = map[provider.Tier]int{provider.TierVM: 0, provider.TierServerless: 1}

func compareKeys(a, b instanceKey) int {
	return cmp.Or(
		cmp.Compare(tierRank(a.tier), tierRank(b.tier)),
		cmp.Compare(a.tier, b.tier),
		cmp.Compare(a.typ, b.typ),
		cmp.Compare(stateRank(a.state), stateRank(b.state)),
		cmp.Compare(a.state, b.state),
	)
}

func tierRank(t provider.Tier) int {
	if r, ok := tierOrder[t]; ok {
		return r
	}
	return len(tierOrder)
}

func stateRank(s provider.State) int {
	if r, ok := stateOrder[s]; ok {
		return r
	}
	return len(stateOrder)
}

// buildData turns the ring (oldest first) into columns.
func buildData(opts Options, snaps []snapshot, errs int64, lastErr string) Data {
	n := len(snaps)
	d := Data{
		Title:        opts.Title,
		IntervalS:    opts.Interval.Seconds(),
		RefreshS:     opts.Refresh.Seconds(),
		Capacity:     opts.Capacity,
		TimesMS:      make([]int64, n),
		SourceErrors: errs,
		LastError:    lastErr,
		Models:       []ModelSeries{},
	}
	index := map[string]int{}                     // model name → index in d.Models
	present := map[string][]bool{}                // model name → sampled at instant i
	keys := map[string][]instanceKey{}            // model name → instance keys seen
	series := map[string]map[instanceKey]Column{} // model name → key → column
	for i, s := range snaps {
		d.TimesMS[i] = s.at.UnixMilli()
		for _, m := range s.models {
			j, ok := index[m.Model]
			if !ok {
				j = len(d.Models)
				index[m.Model] = j
				d.Models = append(d.Models, newModelSeries(m.Model, n))
				present[m.Model] = make([]bool, n)
				series[m.Model] = map[instanceKey]Column{}
			}
			present[m.Model][i] = true
			ms := &d.Models[j]
			ms.SLO = slo.SpecJSON{ThresholdMS: millis(m.SLO.Threshold), Target: m.SLO.Target}
			ms.ArrivalRPS[i] = Num(m.ArrivalRate)
			ms.ForecastRPS[i] = Num(m.Forecast)
			ms.ForecastHorizonS = m.ForecastHorizon.Seconds()
			ms.BatchMean[i] = Num(m.BatchMean)
			ms.BatchMax[i] = Num(m.BatchMax)
			ms.LatencyMS.P50[i] = latencyNum(m.Latency.P50)
			ms.LatencyMS.P95[i] = latencyNum(m.Latency.P95)
			ms.LatencyMS.P99[i] = latencyNum(m.Latency.P99)
			ms.Attainment[i] = Num(m.Attainment)
			ms.CostUSD.Total[i] = Num(m.Cost.Total)
			ms.CostUSD.VM[i] = Num(m.Cost.VM)
			ms.CostUSD.Serverless[i] = Num(m.Cost.Serverless)
			for _, c := range m.Instances {
				k := instanceKey{tier: c.Tier, typ: c.Type, state: c.State}
				col, ok := series[m.Model][k]
				if !ok {
					col = nanColumn(n)
					series[m.Model][k] = col
					keys[m.Model] = append(keys[m.Model], k)
				}
				if math.IsNaN(float64(col[i])) {
					col[i] = 0
				}
				col[i] += Num(c.Count)
			}
		}
	}
	// An instance series is 0 (not absent) wherever its model was sampled without it.
	for name, j := range index {
		ks := keys[name]
		slices.SortFunc(ks, compareKeys)
		ms := &d.Models[j]
		ms.Instances = make([]InstanceSeries, 0, len(ks))
		for _, k := range ks {
			col := series[name][k]
			for i, p := range present[name] {
				if p && math.IsNaN(float64(col[i])) {
					col[i] = 0
				}
			}
			ms.Instances = append(ms.Instances, InstanceSeries{Type: k.typ, Tier: k.tier, State: k.state, Count: col})
		}
	}
	d.Overview = overview(d.Models, present, n)
	return d
}

// overview summarises each model's sample at the last instant of the ring (index n-1). A window
// with no completed request is idle: its attainment and p99 are unknown, never 0 % left over
// from an earlier failure.
func overview(models []ModelSeries, present map[string][]bool, n int) []ModelOverview {
	out := make([]ModelOverview, 0, len(models))
	for _, m := range models {
		o := ModelOverview{Name: m.Name, SLO: m.SLO, State: StateAbsent,
			ArrivalRPS: Num(math.NaN()), P99MS: Num(math.NaN()), Attainment: Num(math.NaN())}
		if n == 0 || !present[m.Name][n-1] {
			out = append(out, o)
			continue
		}
		i := n - 1
		for _, s := range m.Instances {
			if c := float64(s.Count[i]); !math.IsNaN(c) {
				o.Instances += int(c)
				if s.State == provider.StateReady {
					o.Ready += int(c)
				}
			}
		}
		o.ArrivalRPS, o.P99MS, o.Attainment = m.ArrivalRPS[i], m.LatencyMS.P99[i], m.Attainment[i]
		switch a := float64(o.Attainment); {
		case math.IsNaN(a):
			o.State, o.P99MS = StateIdle, Num(math.NaN())
		case a < m.SLO.Target:
			o.State = StateViolating
		default:
			o.State = StateOK
		}
		out = append(out, o)
	}
	return out
}

func newModelSeries(name string, n int) ModelSeries {
	return ModelSeries{
		Name:        name,
		ArrivalRPS:  nanColumn(n),
		ForecastRPS: nanColumn(n),
		BatchMean:   nanColumn(n),
		BatchMax:    nanColumn(n),
		LatencyMS:   LatencySeries{P50: nanColumn(n), P95: nanColumn(n), P99: nanColumn(n)},
		Attainment:  nanColumn(n),
		CostUSD:     CostSeries{Total: nanColumn(n), VM: nanColumn(n), Serverless: nanColumn(n)},
	}
}

func nanColumn(n int) Column {
	c := make(Column, n)
	for i := range c {
		c[i] = Num(math.NaN())
	}
	return c
}

// latencyNum converts a latency to milliseconds; zero or negative is unknown.
func latencyNum(d time.Duration) Num {
	if d <= 0 {
		return Num(math.NaN())
	}
	return Num(millis(d))
}

// millis converts a duration to fractional milliseconds.
func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
