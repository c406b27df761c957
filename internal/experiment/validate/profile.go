package validate

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/sloserve/sloserve/internal/app"
	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/load"
	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/provider/local"
	bundled "github.com/sloserve/sloserve/models"
)

// ProfileBatches are the batch sizes the profile measures.
var ProfileBatches = []int{1, 2, 4, 8, 16, 32}

// launchSamples is how many worker launches the profile times.
const launchSamples = 3

// profilePace is the period of the profile's round trips.
const profilePace = 20 * time.Millisecond

// Measured is what the profile step measured on this machine: the served curve (a batch's
// round trip through the gateway to one worker, the service time the simulator draws), its
// spread, and the worker launch delay (process start, model load, first health check).
type Measured struct {
	// Points are the median round trip per batch size.
	Points []PointMS `json:"points"`
	// NoiseCV is the coefficient of variation of Factors (reported; the simulator draws the
	// factors themselves).
	NoiseCV float64 `json:"noise_cv"`
	// Factors are every round trip over its batch size's median: the simulator draws each batch's
	// service time as the curve's times one of them (sim.Config.NoiseFactors), keeping the
	// measured tail (a stalled process on a shared machine) that a log-normal misses.
	Factors []float64 `json:"-"`
	// LaunchMS are the measured launches; LaunchMedianMS and LaunchSigma their log-normal fit
	// (cost.Delay: median and standard deviation of the logarithm).
	// They are timed while the profile's worker serves paced batch-1 round trips (as a live
	// launch happens under load); LaunchFactors are those round trips over the batch-1 median:
	// a launch's process start and model load share the host's cores with the serving worker
	// and the gateway (sim.Config.LaunchNoiseFactors).
	LaunchFactors  []float64 `json:"-"`
	LaunchMS       []float64 `json:"launch_ms"`
	LaunchMedianMS float64   `json:"launch_median_ms"`
	LaunchSigma    float64   `json:"launch_sigma"`
	// Failures counts the round trips that failed (a 504 past the SLO on a stalled machine) and
	// were left out.
	Failures int `json:"failures"`
	// Stalls is the whole-host stall process the probe measured beside the round trips (the
	// simulator's sim.Config.Stalls); the round trips that fell in a stall are left out of
	// Factors and LaunchFactors.
	Stalls StallsMeasured `json:"stalls"`

	factorSpans, launchSpans     []span    // the round trips behind Factors and LaunchFactors
	allFactors, allLaunchFactors []float64 // both before the stalls were split out
}

// PointMS is one batch size's median round trip in ms.
type PointMS struct {
	Batch int     `json:"batch"`
	MS    float64 `json:"ms"`
}

// String is the profile on one line.
func (m Measured) String() string {
	var b strings.Builder
	for _, p := range m.Points {
		fmt.Fprintf(&b, "b=%d %.2f ms, ", p.Batch, p.MS)
	}
	fmt.Fprintf(&b, "cv %.2f, %d failed; launch median %.0f ms (σ_log %.2f, %v)", m.NoiseCV, m.Failures, m.LaunchMedianMS, m.LaunchSigma, m.LaunchMS)
	if fs := slices.Sorted(slices.Values(m.LaunchFactors)); len(fs) > 0 {
		fmt.Fprintf(&b, "; during launches b=1 × %.2f median, × %.2f p90 (%d round trips)", fs[len(fs)/2], fs[len(fs)*9/10], len(fs))
	}
	fmt.Fprintf(&b, "; stalls: %s", m.Stalls)
	return b.String()
}

// Curve is the measured round trips as a service-time curve.
func (m Measured) Curve() (profile.Curve, error) {
	pts := make([]profile.Point, len(m.Points))
	for i, p := range m.Points {
		pts[i] = profile.Point{Batch: p.Batch, Time: time.Duration(p.MS * float64(time.Millisecond))}
	}
	return profile.NewCurve(pts)
}

// LaunchDelay is the measured launch delay as the catalog's distribution.
func (m Measured) LaunchDelay() cost.Delay {
	return cost.Delay{Median: time.Duration(m.LaunchMedianMS * float64(time.Millisecond)), Sigma: m.LaunchSigma}
}

// MeasureProfile starts the stack with one worker and no batching, times ProfileBatches round
// trips of real test images through the gateway, then times launchSamples worker launches while
// that worker serves (launchesUnderLoad); a stall probe runs beside both (splitStalls).
func MeasureProfile(ctx context.Context, o Options) (Measured, error) {
	m, err := measureRoundTrips(ctx, o)
	if err != nil {
		return m, err
	}
	mean, sd := meanSD(m.Factors)
	m.NoiseCV = min(sd/mean, 2)
	return m, nil
}

// measureRoundTrips is MeasureProfile's measurement: the probe runs from the first round trip
// to the last launch, and its stalls are split out of the factors (splitStalls) before the
// stack closes.
func measureRoundTrips(ctx context.Context, o Options) (m Measured, err error) {
	cfg := baseConfig(o)
	cfg.Controller.Policy = config.ControllerNone
	cfg.Models[0].Batching.Policy = "none"
	st, err := app.Start(ctx, cfg, app.StackOptions{Logger: o.Log, Env: o.WorkerEnv})
	if err != nil {
		return m, fmt.Errorf("validate: profile: %w", err)
	}
	defer closeStack(st)
	probe := startProbe()
	defer func() { m.splitStalls(probe.finish()) }()
	set, err := bundled.Sample()
	if err != nil {
		return m, err
	}
	input, err := inputName(o.Model)
	if err != nil {
		return m, err
	}
	client := &http.Client{Timeout: 10 * time.Second}
	url := st.URL + "/v2/models/" + o.Model + "/infer"
	for _, b := range ProfileBatches {
		pays, err := load.BatchPayloads(set, input, b)
		if err != nil {
			return m, err
		}
		var ts []float64
		var spans []span
		for i := range o.ProfileReps + 3 { // three unrecorded round trips first
			sent := time.Now()
			d, err := post(ctx, client, url, pays[i%len(pays)].Body)
			if err != nil {
				// A loaded machine can stall one round trip past the SLO (504): skip a few.
				if m.Failures++; ctx.Err() != nil || m.Failures > o.ProfileReps {
					return m, fmt.Errorf("validate: profile at batch %d: %w", b, err)
				}
				continue
			}
			if i >= 3 {
				ts = append(ts, d.Seconds()*1e3)
				spans = append(spans, span{from: sent, to: sent.Add(d)})
			}
			// Paced, not back to back: the round trips sample the machine's load over seconds
			// (its stalls come and go), as the replay's requests do.
			if err := sleep(ctx, profilePace-d); err != nil {
				return m, err
			}
		}
		if len(ts) == 0 {
			return m, fmt.Errorf("validate: profile at batch %d: every round trip failed", b)
		}
		// The curve is the median round trip: a stall of the shared machine (tens of ms) lands
		// on whichever batch size was being timed, so a mean would bend the curve; the spread
		// is kept in the pooled factors instead, which every batch size draws from (less the
		// round trips in the stalls the probe saw: the simulator's stall process makes those).
		med := median(ts)
		for _, t := range ts {
			m.Factors = append(m.Factors, t/med)
		}
		m.Points = append(m.Points, PointMS{Batch: b, MS: med})
		m.factorSpans = append(m.factorSpans, spans...)
	}
	return m, launchesUnderLoad(ctx, o, client, url, &m)
}

// launchesUnderLoad times the worker launches (measureLaunches) while the profile's worker
// serves paced batch-1 round trips, and keeps each of those over the batch-1 median as a
// launch factor.
func launchesUnderLoad(ctx context.Context, o Options, client *http.Client, url string, m *Measured) error {
	set, err := bundled.Sample()
	if err != nil {
		return err
	}
	input, err := inputName(o.Model)
	if err != nil {
		return err
	}
	pays, err := load.BatchPayloads(set, input, 1)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- measureLaunches(ctx, o, m) }()
	if len(m.Points) == 0 {
		return fmt.Errorf("validate: profile: no batch-1 median to judge launches against")
	}
	med := m.Points[0].MS
	for i := 0; ; i++ {
		select {
		case err := <-done:
			return err
		default:
		}
		sent := time.Now()
		d, err := post(ctx, client, url, pays[i%len(pays)].Body)
		m.launchSpans = append(m.launchSpans, span{from: sent, to: time.Now()})
		if err == nil {
			m.LaunchFactors = append(m.LaunchFactors, d.Seconds()*1e3/med)
		} else if ctx.Err() != nil {
			return <-done
		} else {
			// A round trip past the SLO (504) is the slowest a launch makes one: the SLO's factor.
			m.LaunchFactors = append(m.LaunchFactors, float64(o.SLO.Threshold.Milliseconds())/med)
		}
		if err := sleep(ctx, profilePace-d); err != nil {
			return <-done
		}
	}
}

// measureLaunches launches workers one after the other on a local provider configured as the
// stack's and times each from Launch to ready.
func measureLaunches(ctx context.Context, o Options, m *Measured) error {
	cfg := baseConfig(o)
	w := cfg.Workers
	args := []string{"--runtime", w.Runtime}
	if w.ONNXRuntimeLib != "" {
		args = append(args, "--onnxruntime-lib", w.ONNXRuntimeLib)
	}
	p, err := local.New(local.Config{Binary: w.Binary, Args: args, Env: o.WorkerEnv, StartTimeout: w.StartTimeout,
		HealthInterval: w.HealthInterval, StopTimeout: w.StopTimeout, StateDir: cmp.Or(w.StateDir, local.DefaultStateDir())}, o.Log)
	if err != nil {
		return fmt.Errorf("validate: profile: %w", err)
	}
	defer p.Close()
	for range launchSamples {
		start := time.Now()
		in, err := p.Launch(ctx, provider.Spec{Model: o.Model, Type: cfg.Models[0].InstanceType.Name, Tier: provider.TierVM})
		if err != nil {
			return fmt.Errorf("validate: profile: launch: %w", err)
		}
		if _, err := p.WaitReady(ctx, in.ID); err != nil {
			return fmt.Errorf("validate: profile: launch: %w", err)
		}
		m.LaunchMS = append(m.LaunchMS, math.Round(time.Since(start).Seconds()*1e4)/10)
		if err := p.Terminate(ctx, in.ID); err != nil {
			return fmt.Errorf("validate: profile: terminate: %w", err)
		}
	}
	logs := make([]float64, len(m.LaunchMS))
	for i, v := range m.LaunchMS {
		logs[i] = math.Log(v)
	}
	mu, sd := meanSD(logs)
	m.LaunchMedianMS, m.LaunchSigma = math.Round(math.Exp(mu)*10)/10, sd
	return nil
}

// post sends one inference request and returns its round trip.
func post(ctx context.Context, c *http.Client, url string, body []byte) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	return d, nil
}

// sleep waits d (nothing when d ≤ 0) or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// inputName is the bundled model's one input.
func inputName(model string) (string, error) {
	man, err := bundled.Manifest()
	if err != nil {
		return "", err
	}
	mi, ok := man.Model(model)
	if !ok {
		return "", fmt.Errorf("validate: model: no bundled model %q (have %v)", model, bundled.Names())
	}
	if len(mi.Inputs) != 1 {
		return "", fmt.Errorf("validate: model: %q has %d inputs; the sample feeds one", model, len(mi.Inputs))
	}
	return mi.Inputs[0].Name, nil
}

// meanSD is the mean and the sample standard deviation of xs.
func meanSD(xs []float64) (mean, sd float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)-1))
}

// median is the middle of xs (the mean of the two middle ones for an even count).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
