package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/slo"
	"github.com/sloserve/sloserve/internal/trace"
)

// WorkloadFunction names one function of a multi-function workload: the INFless profile file's
// model name, its SLO, and which of the workload's traces drives it.
type WorkloadFunction struct {
	Model string
	SLO   time.Duration
	Trace int
}

// OSVTQA is INFless §5.1's two applications sharing one cluster: the online second-hand vehicle
// trading service (SSD, MobileNet, ResNet-50; SLO 200 ms) and the Q&A robot (TextCNN-69,
// LSTM-2365; SLO 50 ms — DSSM-2389 has no published profile). With three traces T0–T2 (e.g.
// Azure fn2–fn4) the functions take T0, T1, T2 (OSVT) and T0, T2 (Q&A), so that every trace drives
// both applications and no two functions of one application share a trace.
var OSVTQA = []WorkloadFunction{
	{"ssd", 200 * time.Millisecond, 0},
	{"mobilenet", 200 * time.Millisecond, 1},
	{"resnet-50", 200 * time.Millisecond, 2},
	{"textcnn-69", 50 * time.Millisecond, 0},
	{"lstm-maxclass-2365", 50 * time.Millisecond, 2},
}

// WorkloadOptions shape a workload's traces.
type WorkloadOptions struct {
	// PeakRPS rescales every trace so that its highest step rate is this (requests per second);
	// 0 keeps the traces' own rates.
	PeakRPS float64
	// From skips this much of every trace first (the replay starts at offset From of the trace,
	// at the run's time 0); 0 = from the start. ≥ 0.
	From time.Duration
	// Duration replays only this much of every trace (from From); 0 = to the end.
	Duration time.Duration
	// SLOTarget is the fraction of requests that must meet the SLO (INFless: 95 %).
	SLOTarget float64
	// Seed seeds the Poisson arrivals (function i uses Seed + i).
	Seed uint64
}

// LoadWorkload builds the functions of fns from profileDir (INFless `<model>-profile-results.txt`
// files) and trace files.
func LoadWorkload(profileDir string, traces []string, fns []WorkloadFunction, o WorkloadOptions) ([]ClusterFunction, error) {
	if o.PeakRPS < 0 || o.From < 0 || o.Duration < 0 || !(o.SLOTarget > 0 && o.SLOTarget <= 1) {
		return nil, fmt.Errorf("workload: peak %v, from %v and duration %v must be ≥ 0 and slo target %v in (0, 1]", o.PeakRPS, o.From, o.Duration, o.SLOTarget)
	}
	var out []ClusterFunction
	for i, wf := range fns {
		if wf.Trace < 0 || wf.Trace >= len(traces) {
			return nil, fmt.Errorf("workload: function %s wants trace %d of %d", wf.Model, wf.Trace, len(traces))
		}
		f, err := os.Open(filepath.Join(profileDir, wf.Model+"-profile-results.txt"))
		if err != nil {
			return nil, fmt.Errorf("workload: %w", err)
		}
		p, err := profile.ReadINFless(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("workload: %s: %w", wf.Model, err)
		}
		tr, err := trace.Open(traces[wf.Trace])
		if err != nil {
			return nil, fmt.Errorf("workload: %w", err)
		}
		opt := trace.Options{From: o.From}
		if o.Duration > 0 {
			opt.To = o.From + o.Duration
		}
		if o.PeakRPS > 0 && tr.MaxRate() > 0 {
			opt.RateScale = o.PeakRPS / tr.MaxRate()
		}
		if tr, err = tr.With(opt); err != nil {
			return nil, fmt.Errorf("workload: %s: %w", traces[wf.Trace], err)
		}
		out = append(out, ClusterFunction{
			Name: wf.Model, Profile: p, SLO: slo.Spec{Threshold: wf.SLO, Target: o.SLOTarget},
			Arrivals: tr.Arrivals(o.Seed + uint64(i)), Trace: tr.Name, MeanRPS: tr.MeanRate(),
		})
	}
	return out, nil
}
