package experiment

import (
	"context"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/sloserve/sloserve/internal/autoscale"
	"github.com/sloserve/sloserve/internal/planner"
	markpol "github.com/sloserve/sloserve/internal/policy/mark"
	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/sim"
	"github.com/sloserve/sloserve/internal/slo"
	"github.com/sloserve/sloserve/internal/trace"
)

// markBreakdown wraps the mark scaler and splits the VM bill by what each billed instance-second
// was for (docs/mark.md, "Where the cost goes"): launching (billed before ready), ready and in
// Alg. 1's current plan, or ready but surplus, waiting out the cool-down. The plan is recomputed
// with planner.Schedule from the same facts the scaler sees (pure, so it does not disturb the
// run). It also prices an oracle: every minute's actual peak of 5 s arrival rates covered by
// the planner's own mix (Alg. 1 with the single-type guard), launched instantly with no launch
// overhead and billed for that minute only.
type markBreakdown struct {
	m        *markpol.Policy
	price    map[string]float64
	last     time.Time
	lastSeen time.Time
	cost     map[string]float64 // category → US dollars
	// oracle: arrivals per 5 s window of the current minute
	minute   time.Time
	win      [12]int
	oracle   float64
	launches map[string]int // reason + type → count
}

func (b *markBreakdown) Scale(s autoscale.Snapshot, now time.Time) autoscale.Decision {
	for _, x := range s.History {
		if !x.Start.After(b.lastSeen) && !b.lastSeen.IsZero() {
			continue
		}
		b.lastSeen = x.Start
		m := x.Start.Truncate(time.Minute)
		if m != b.minute {
			b.closeMinute()
			b.minute = m
		}
		b.win[int(x.Start.Sub(m)/(5*time.Second))%12] += x.Arrivals
	}
	if !b.last.IsZero() {
		dt := now.Sub(b.last).Hours()
		var running []planner.Running
		for _, f := range s.Fleet {
			if f.State == provider.StateLaunching || f.State == provider.StateReady {
				running = append(running, planner.Running{ID: f.ID, Type: f.Type, Ready: f.State == provider.StateReady, Launched: f.Launched})
			}
		}
		surplus := map[string]bool{}
		if p, err := planner.Schedule(b.m.Types(), running, planner.Forecast{Start: b.m.Monitor().UnitStart(), Step: b.m.Unit(), Rates: b.m.Forecast()}, b.m.PlannerConfig(), now); err == nil {
			for _, id := range p.Surplus {
				surplus[id] = true
			}
		}
		for _, f := range s.Fleet {
			c := b.price[f.Type] * dt
			switch {
			case f.State == provider.StateLaunching:
				b.cost["launching"] += c
			case f.State == provider.StateReady && surplus[f.ID]:
				b.cost["surplus"] += c
			case f.State == provider.StateReady:
				b.cost["planned"] += c
			default:
				b.cost["other"] += c
			}
		}
	}
	b.last = now
	d := b.m.Scale(s, now)
	for _, sp := range d.Launch {
		b.launches[strings.TrimPrefix(d.Reason, "mark: ")+" → "+sp.Type]++
	}
	return d
}

// closeMinute adds the oracle's cost of the minute just completed.
func (b *markBreakdown) closeMinute() {
	if b.minute.IsZero() {
		return
	}
	peak := 0.0
	for i, n := range b.win {
		peak = math.Max(peak, float64(n)/5)
		b.win[i] = 0
	}
	// Free launches: no launch overhead (a nanosecond's rent) and no cool-down.
	types := append([]planner.InstanceType(nil), b.m.Types()...)
	for i := range types {
		types[i].LaunchDelay = time.Nanosecond
	}
	c := planner.MarkConfig{Headroom: 1, MaxInstances: planner.DefaultMaxInstances}
	p, err := planner.Schedule(types, nil, planner.Forecast{Start: b.minute, Step: time.Minute, Rates: []float64{peak}}, c, b.minute)
	if err != nil {
		return
	}
	for _, n := range p.Launch {
		b.oracle += b.price[n] / 60
	}
}

func init() {
	register(Experiment{Name: "mark-breakdown", Summary: "where mark's VM bill goes on MArk's setting: planned, surplus, launching; the oracle (docs/mark.md)",
		Doc: "docs/mark.md \"Where the cost goes\"; docs/mark-sim*.yaml, DATA/traces (Twitter × 1.8, Azure fn4 × 1400, 24 h); about 3 min", Run: markBreakdownExperiment})
}

// markBreakdownExperiment prints the cost split of mark under the default, original and spot
// configurations of MArk §5.1's setting on the Twitter day (× 1.8) and Azure fn4 (× 1400).
func markBreakdownExperiment(ctx context.Context, o Options, w io.Writer) error {
	traces := []struct {
		name, path string
		scale      float64
		to         time.Duration
	}{
		{"twitter", o.data("traces/twitter-2017-05-25.rps.csv"), 1.8, 0},
		{"fn4", o.data("traces/azure-functions/fn4.rpm.csv"), 1400, 24 * time.Hour},
	}
	fmt.Fprintln(w, "| config | trace | attained | total $ | VM $ | serverless $ | planned $ | surplus $ | launching $ | other $ | oracle $ | launches |")
	fmt.Fprintln(w, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
	for _, cfgName := range []string{"mark-sim.yaml", "mark-sim-original.yaml", "mark-sim-spot.yaml"} {
		fc, err := LoadFileConfig(o.root("docs/" + cfgName))
		if err != nil {
			return err
		}
		for _, tc := range traces {
			to := tc.to
			if o.Duration > 0 {
				to = o.Duration
			}
			tr, err := trace.Open(tc.path)
			if err == nil {
				tr, err = tr.With(trace.Options{RateScale: tc.scale, To: to})
			}
			if err != nil {
				return fmt.Errorf("mark-breakdown: %w", err)
			}
			o.progress("mark-breakdown: %s / %s", cfgName, tc.name)
			b, s, err := MarkBreakdown(ctx, fc, tr)
			if err != nil {
				return fmt.Errorf("mark-breakdown %s / %s: %w", cfgName, tc.name, err)
			}
			var lines []string
			for k, v := range b.Launches {
				lines = append(lines, fmt.Sprintf("%s %d", k, v))
			}
			sort.Strings(lines)
			fmt.Fprintf(w, "| %s | %s | %.4f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %s |\n", cfgName, tc.name, s.SLOAttainment,
				s.CostUSD.Total, s.CostUSD.VM, s.CostUSD.Serverless, b.Cost["planned"], b.Cost["surplus"], b.Cost["launching"], b.Cost["other"], b.Oracle,
				strings.Join(lines, ", "))
		}
	}
	return nil
}

// CostSplit is mark's VM bill split by what each billed instance-second was for (US dollars by
// "planned", "surplus", "launching", "other"), the oracle's price, and the launches by reason
// and type.
type CostSplit struct {
	Cost     map[string]float64
	Oracle   float64
	Launches map[string]int
}

// MarkBreakdown runs mark with fc's setting (the simulator's defaults when fc is nil) on tr and
// splits its VM bill (docs/mark.md, "Where the cost goes").
func MarkBreakdown(ctx context.Context, fc *FileConfig, tr *trace.Trace) (CostSplit, slo.Summary, error) {
	return markBreakdownLoad(ctx, fc, tr, sim.Load(tr))
}

// markBreakdownLoad is MarkBreakdown with the offline load statistics the policy is given (the zero
// LoadStats: none, so MArk starts with no initial plan and its planner builds the whole fleet).
func markBreakdownLoad(ctx context.Context, fc *FileConfig, tr *trace.Trace, load sim.LoadStats) (CostSplit, slo.Summary, error) {
	cfg := sim.DefaultConfig()
	if fc != nil {
		if err := fc.Apply(&cfg); err != nil {
			return CostSplit{}, slo.Summary{}, err
		}
	}
	cat, err := fc.LoadCatalog()
	if err != nil {
		return CostSplit{}, slo.Summary{}, err
	}
	model, err := fc.LoadModel()
	if err != nil {
		return CostSplit{}, slo.Summary{}, err
	}
	env := sim.Env{Catalog: &cat, Model: model, SLO: cfg.SLO, Load: load, Decode: fc.Decoder("mark")}
	p, err := sim.New("mark", env)
	if err != nil {
		return CostSplit{}, slo.Summary{}, err
	}
	b := &markBreakdown{m: p.Scaler.(*markpol.Policy), price: map[string]float64{}, cost: map[string]float64{}, launches: map[string]int{}}
	for _, it := range cat.Types {
		b.price[it.Name] = it.PricePerHour
		b.price[it.Name+"/spot"] = it.SpotPricePerHour
	}
	p.Scaler = b
	cfg.Trace = tr.Name
	res, err := sim.Run(ctx, cfg, &cat, model, p, tr.Arrivals(cfg.Seed))
	if err != nil {
		return CostSplit{}, slo.Summary{}, err
	}
	b.closeMinute()
	return CostSplit{Cost: b.cost, Oracle: b.oracle, Launches: b.launches}, res.Summary, nil
}
