package keepalive

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Unix(0, 0).UTC()

func min_(n int) time.Duration { return time.Duration(n) * time.Minute }

// observeIdle feeds p invocations separated by the given idle times (instantaneous invocations)
// and returns the time of the last one.
func observeIdle(p Policy, idles ...time.Duration) time.Time {
	t := t0
	p.Observe(t, t)
	for _, d := range idles {
		t = t.Add(d)
		p.Observe(t, t)
	}
	return t
}

func repeat(d time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

func TestHHPWindows(t *testing.T) {
	tests := []struct {
		name     string
		idles    []time.Duration
		wantPre  time.Duration
		wantKeep time.Duration
		reason   string
	}{
		{"no idle time yet: standard keep-alive of the range", nil, 0, 4 * time.Hour, "uncertain"},
		{"five idle times: percentiles already (no sample floor)", repeat(min_(30), 5), 27 * time.Minute,
			time.Duration(math.Ceil(float64(31*time.Minute)*1.1)) - 27*time.Minute, "histogram"},
		{"periodic every 30 minutes: pre-warm just before, short keep-alive",
			repeat(min_(30), 40), 27 * time.Minute, time.Duration(math.Ceil(float64(31*time.Minute)*1.1)) - 27*time.Minute, "histogram"},
		{"flat spread over the range: not representative",
			func() []time.Duration {
				var out []time.Duration
				for i := range 240 {
					out = append(out, min_(i))
				}
				return out
			}(), 0, 4 * time.Hour, "CV"},
		{"most idle times beyond 4 hours: forecast ±15 % around the last one",
			append(repeat(min_(1), 10), repeat(5*time.Hour, 20)...), 255 * time.Minute, 345*time.Minute - 255*time.Minute, "out of bounds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewHHP(DefaultHHPConfig())
			if err != nil {
				t.Fatal(err)
			}
			last := observeIdle(p, tt.idles...)
			w := p.Windows(last)
			if w.PreWarm != tt.wantPre || w.KeepAlive != tt.wantKeep || !strings.Contains(w.Reason, tt.reason) {
				t.Errorf("Windows (-want +got):\n-pre %v keep %v (%s)\n+pre %v keep %v (%s)", tt.wantPre, tt.wantKeep, tt.reason, w.PreWarm, w.KeepAlive, w.Reason)
			}
		})
	}
}

func TestHHPHistoryForgets(t *testing.T) {
	cfg := DefaultHHPConfig()
	cfg.History = time.Hour
	p, err := NewHHP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	last := observeIdle(p, repeat(min_(2), 30)...)
	if w := p.Windows(last); strings.Contains(w.Reason, "uncertain") {
		t.Fatalf("fresh history fell back: %s", w.Reason)
	}
	if w := p.Windows(last.Add(2 * time.Hour)); !strings.Contains(w.Reason, "uncertain") {
		t.Errorf("history older than an hour was still used: %+v", w)
	}
}

// pauses returns n repetitions of a pause followed by k one-minute idle times (a burst: within
// LSTH's linger).
func pauses(pause time.Duration, n, k int) []time.Duration {
	var out []time.Duration
	for range n {
		out = append(out, pause)
		out = append(out, repeat(min_(1), k)...)
	}
	return out
}

// ceil11 is HHP's loaded-until for a tail bin ending at d: d × 1.1 rounded up.
func ceil11(d time.Duration) time.Duration { return time.Duration(math.Ceil(float64(d) * 1.1)) }

func TestLSTHWindows(t *testing.T) {
	linger := 66 * time.Second
	// 20 pauses of 30 min with bursts between, then an hour of bursts: the last hour has no pause.
	periodic := append(pauses(min_(30), 20, 5), repeat(min_(1), 61)...)
	// The same, then three 10-minute pauses within the last hour.
	recent := append(slices.Clone(periodic), pauses(min_(10), 3, 5)...)
	// Long: pauses 20 × bin 30 + 3 × bin 10: head bin 10 (pre-warm 9 min), tail bin 30.
	// Short: 3 × bin 10, loaded until ceil11(11 min).
	lka, ska := ceil11(min_(31))-min_(9), ceil11(min_(11))-min_(9)
	tests := []struct {
		name   string
		gamma  float64
		minCV  float64
		idles  []time.Duration
		want   Windows
		reason string
	}{
		{"no idle time yet: HHP's standard keep-alive", 0.5, 2, nil, Windows{KeepAlive: 4 * time.Hour}, "uncertain"},
		{"continuous load: every idle time within the linger, HHP's keep-alive of the burst", 0.5, 2, repeat(0, 50),
			Windows{KeepAlive: ceil11(min_(1))}, "within the linger"},
		{"periodic pauses, none in the last hour: linger, unload, reload before the next pause", 0.5, 2, periodic,
			Windows{Linger: linger, PreWarm: min_(27), KeepAlive: ceil11(min_(31)) - min_(27)}, "no pause in the short window"},
		{"recent shorter pauses: keep-alive windows mixed from the long pre-warm", 0.5, 2, recent,
			Windows{Linger: linger, PreWarm: min_(9), KeepAlive: (lka + ska) / 2}, "short keep-alive"},
		{"γ = 1: the long histogram alone", 1, 2, recent, Windows{Linger: linger, PreWarm: min_(9), KeepAlive: lka}, "γ=1"},
		{"γ = 0: the short keep-alive alone, pre-warm still the long one", 0, 2, recent,
			Windows{Linger: linger, PreWarm: min_(9), KeepAlive: ska}, "γ=0"},
		{"uncertain pauses: standard keep-alive from 0, one interval", 0.5, 1000, recent, Windows{KeepAlive: 4 * time.Hour}, "uncertain"},
		{"pauses beyond the range: forecast ±15 % around the last pause, not the last idle time", 0.5, 2, pauses(5*time.Hour, 3, 3),
			Windows{Linger: linger, PreWarm: 255 * time.Minute, KeepAlive: 90 * time.Minute}, "out of bounds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultLSTHConfig()
			cfg.Gamma, cfg.MinCV = tt.gamma, tt.minCV
			p, err := NewLSTH(cfg)
			if err != nil {
				t.Fatal(err)
			}
			w := p.Windows(observeIdle(p, tt.idles...))
			if far(w.PreWarm, tt.want.PreWarm) || far(w.KeepAlive, tt.want.KeepAlive) || w.Linger != tt.want.Linger || !strings.Contains(w.Reason, tt.reason) {
				t.Errorf("Windows (-want +got):\n-linger %v pre %v keep %v (%s)\n+linger %v pre %v keep %v (%s)",
					tt.want.Linger, tt.want.PreWarm, tt.want.KeepAlive, tt.reason, w.Linger, w.PreWarm, w.KeepAlive, w.Reason)
			}
		})
	}
}

// TestLSTHShortForgets checks that the short histogram covers only the last hour: once the
// recent 10-minute pauses are more than an hour old, the long histogram decides alone.
func TestLSTHShortForgets(t *testing.T) {
	p, err := NewLSTH(DefaultLSTHConfig())
	if err != nil {
		t.Fatal(err)
	}
	last := observeIdle(p, pauses(min_(10), 3, 0)...)
	if w := p.Windows(last); !strings.Contains(w.Reason, "short keep-alive") {
		t.Fatalf("fresh short histogram unused: %s", w.Reason)
	}
	if w := p.Windows(last.Add(61 * time.Minute)); !strings.Contains(w.Reason, "no pause in the short window") {
		t.Errorf("pauses older than an hour still in the short histogram: %s", w.Reason)
	}
}

// TestLSTHLiteralMix checks MixWindows, §3.5's formulas read literally.
func TestLSTHLiteralMix(t *testing.T) {
	cfg := DefaultLSTHConfig()
	cfg.MixWindows = true
	p, err := NewLSTH(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// 20 idle times of 60 minutes (long-term pattern), then a burst of 70 idle times of 1 minute.
	idles := append(repeat(min_(60), 20), repeat(min_(1), 70)...)
	last := observeIdle(p, idles...)
	w := p.Windows(last)
	// Long: head bin 1 (the burst is most of the day's idle times), tail bin 60 -> pre 54s,
	// end ceil(61m*1.1).
	// Short (last hour: only the burst): head 1 m, tail 2 m -> pre 54s, end 2m12s.
	lp, lend := 54*time.Second, time.Duration(math.Ceil(float64(61*time.Minute)*1.1))
	sp, send := 54*time.Second, time.Duration(math.Ceil(float64(2*time.Minute)*1.1))
	wantPre := (lp + sp) / 2
	wantKeep := ((lend - lp) + (send - sp)) / 2
	if far(w.PreWarm, wantPre) || far(w.KeepAlive, wantKeep) {
		t.Errorf("Windows (-want +got):\n-pre %v keep %v\n+pre %v keep %v (%s)", wantPre, wantKeep, w.PreWarm, w.KeepAlive, w.Reason)
	}
	// Two hours later the short histogram is empty: the long one decides alone.
	w = p.Windows(last.Add(2 * time.Hour))
	if far(w.PreWarm, lp) || far(w.KeepAlive, lend-lp) {
		t.Errorf("long-only Windows (-want +got):\n-pre %v keep %v\n+pre %v keep %v (%s)", lp, lend-lp, w.PreWarm, w.KeepAlive, w.Reason)
	}
}

// far reports whether a and b differ by more than a microsecond.
func far(a, b time.Duration) bool { return (a - b).Abs() > time.Microsecond }

func TestLSTHFallsBackWithoutHistory(t *testing.T) {
	p, err := NewLSTH(DefaultLSTHConfig())
	if err != nil {
		t.Fatal(err)
	}
	if w := p.Windows(observeIdle(p)); w.KeepAlive != 4*time.Hour || w.PreWarm != 0 {
		t.Errorf("Windows without idle times (-want +got):\n-pre 0 keep %v\n+pre %v keep %v", 4*time.Hour, w.PreWarm, w.KeepAlive)
	}
}

func TestWindowsLoaded(t *testing.T) {
	tests := []struct {
		name string
		w    Windows
		// gaps after the invocation, whether each finds the instance loaded, and how long
		// it was loaded by then.
		gaps   []time.Duration
		loaded []bool
		idle   []time.Duration
	}{
		{"keep-alive only", Windows{KeepAlive: min_(10)},
			[]time.Duration{0, min_(10), min_(11)}, []bool{true, true, false}, []time.Duration{0, min_(10), min_(10)}},
		{"pre-warm: unloaded right after the invocation (HHP)", Windows{PreWarm: min_(5), KeepAlive: min_(10)},
			[]time.Duration{0, min_(4), min_(5), min_(15), min_(16)}, []bool{false, false, true, true, false},
			[]time.Duration{0, 0, 0, min_(10), min_(10)}},
		{"linger, unload, reload at the pre-warm (LSTH)", Windows{Linger: min_(1), PreWarm: min_(5), KeepAlive: min_(10)},
			[]time.Duration{0, min_(1), min_(2), min_(5), min_(7), min_(15), min_(20)},
			[]bool{true, true, false, true, true, true, false},
			[]time.Duration{0, min_(1), min_(1), min_(1), min_(3), min_(11), min_(11)}},
		{"linger reaching the pre-warm: one interval", Windows{Linger: min_(2), PreWarm: min_(1), KeepAlive: min_(10)},
			[]time.Duration{0, 30 * time.Second, min_(11), min_(12)}, []bool{true, true, true, false},
			[]time.Duration{0, 30 * time.Second, min_(11), min_(11)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, g := range tt.gaps {
				if got := tt.w.Loaded(g); got != tt.loaded[i] {
					t.Errorf("Loaded(%v) = %v, want %v", g, got, tt.loaded[i])
				}
				if got := tt.w.loadedFor(g); got != tt.idle[i] {
					t.Errorf("loadedFor(%v) = %v, want %v", g, got, tt.idle[i])
				}
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultHHPConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	if err := DefaultLSTHConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	hhp := map[string]func(*HHPConfig){
		"bin_width":        func(c *HHPConfig) { c.BinWidth = 0 },
		"range":            func(c *HHPConfig) { c.Range = time.Second },
		"head_percentile":  func(c *HHPConfig) { c.HeadPercentile = 0 },
		"tail_percentile":  func(c *HHPConfig) { c.TailPercentile = 1 },
		"margin":           func(c *HHPConfig) { c.Margin = 1 },
		"min_samples":      func(c *HHPConfig) { c.MinSamples = 0 },
		"fallback":         func(c *HHPConfig) { c.Fallback = 0 },
		"min_cv":           func(c *HHPConfig) { c.MinCV = -1 },
		"max_oob_fraction": func(c *HHPConfig) { c.MaxOOBFraction = 0 },
		"forecast_margin":  func(c *HHPConfig) { c.ForecastMargin = 1 },
		"history":          func(c *HHPConfig) { c.History = -1 },
	}
	for field, mutate := range hhp {
		t.Run("hhp "+field, func(t *testing.T) {
			c := DefaultHHPConfig()
			mutate(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), field) {
				t.Errorf("Validate() = %v, want an error naming %q", err, field)
			}
			if _, err := NewHHP(c); err == nil {
				t.Error("NewHHP accepted the bad config")
			}
		})
	}
	lsth := map[string]func(*LSTHConfig){
		"short": func(c *LSTHConfig) { c.Short = 0 },
		"long":  func(c *LSTHConfig) { c.Long = c.Short },
		"gamma": func(c *LSTHConfig) { c.Gamma = 1.5 },
	}
	for field, mutate := range lsth {
		t.Run("lsth "+field, func(t *testing.T) {
			c := DefaultLSTHConfig()
			mutate(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), field) {
				t.Errorf("Validate() = %v, want an error naming %q", err, field)
			}
			if _, err := NewLSTH(c); err == nil {
				t.Error("NewLSTH accepted the bad config")
			}
		})
	}
}

// scripted returns fixed windows regardless of history.
type scripted struct{ w Windows }

func (s *scripted) Observe(start, end time.Time) {}
func (s *scripted) Windows(time.Time) Windows    { return s.w }

func TestReplay(t *testing.T) {
	// Active minutes 0, 2, 3, 9 (idle times after the busy minute: 1, 0, 5), trace of 12 minutes.
	counts := []int{2, 0, 1, 4, 0, 0, 0, 0, 0, 1, 0, 0}
	tests := []struct {
		name     string
		w        Windows
		wantCold int
		wantIdle float64
	}{
		{"keep alive 2 minutes: only the 5-minute gap is cold", Windows{KeepAlive: min_(2)}, 2, 1 + 0 + 2 + 2},
		{"keep alive 10 minutes: only the first start is cold", Windows{KeepAlive: min_(10)}, 1, 1 + 0 + 5 + 2},
		{"pre-warm 1 minute: the back-to-back minute is cold", Windows{PreWarm: min_(1), KeepAlive: min_(5)}, 2, 0 + 0 + 4 + 1},
		{"no keep-alive: every gap is cold", Windows{}, 3, 0},
		{"linger 1 minute, reload at 3: the 5-minute gap is warm", Windows{Linger: min_(1), PreWarm: min_(3), KeepAlive: min_(5)}, 1, 1 + 0 + (1 + 2) + 1},
		{"linger 1 minute, reload at 3 for 1: the 5-minute gap is cold", Windows{Linger: min_(1), PreWarm: min_(3), KeepAlive: min_(1)}, 2, 1 + 0 + (1 + 1) + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Replay("s", counts, time.Minute, &scripted{tt.w})
			if r.ColdStarts != tt.wantCold || math.Abs(r.IdleMinutes-tt.wantIdle) > 1e-9 || r.Invocations != 8 || r.ActiveSteps != 4 {
				t.Errorf("Replay (-want +got):\n-cold %d idle %v invocations 8 active 4\n+cold %d idle %v invocations %d active %d",
					tt.wantCold, tt.wantIdle, r.ColdStarts, r.IdleMinutes, r.Invocations, r.ActiveSteps)
			}
		})
	}
	if r := Replay("empty", []int{0, 0}, time.Minute, &Fixed{KeepAlive: time.Minute}); r.ColdStarts != 0 || r.IdleMinutes != 0 {
		t.Errorf("empty trace: %+v", r)
	}
}

func TestReadCounts(t *testing.T) {
	f, err := os.Open("testdata/fn-excerpt.rpm.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ReadCounts(f)
	if err != nil {
		t.Fatal(err)
	}
	want := []int{1, 0, 3, 0, 0, 1, 0, 0, 0, 2}
	if !slices.Equal(got, want) {
		t.Errorf("ReadCounts (-want +got):\n-%v\n+%v", want, got)
	}
	for name, in := range map[string]string{
		"empty":          "",
		"only a header":  "t_min,count\n",
		"no comma":       "0 1\n",
		"negative count": "0,-1\n",
		"decreasing":     "3,1\n2,1\n",
		"bad step":       "0,1\nx,2\n",
		"huge step":      "999999999,1\n",
		// FuzzReadCounts: a 14-byte file that expanded to 38.9M zero steps (seconds, 300 MB).
		"step past the bound": "5,1\n38888888,1\n",
		"first step past it":  fmt.Sprintf("0,1\n%d,1\n", maxCountSteps),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := ReadCounts(strings.NewReader(in)); err == nil {
				t.Errorf("ReadCounts(%q) accepted bad input", in)
			}
		})
	}
	// The last step the bound allows is read, zeros before it.
	got, err = ReadCounts(strings.NewReader(fmt.Sprintf("%d,2\n", maxCountSteps-1)))
	if err != nil || len(got) != maxCountSteps || got[0] != 0 || got[maxCountSteps-1] != 2 {
		t.Errorf("ReadCounts(step %d) = %d steps, %v; want %d steps ending in 2", maxCountSteps-1, len(got), err, maxCountSteps)
	}
}

func FuzzReadCounts(f *testing.F) {
	b, err := os.ReadFile("testdata/fn-excerpt.rpm.csv")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("0,1\n5,2\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		counts, err := ReadCounts(strings.NewReader(string(in)))
		if err != nil {
			return
		}
		for _, c := range counts {
			if c < 0 {
				t.Fatalf("negative count %d", c)
			}
		}
		// Any decoded trace replays without panicking and with sane totals.
		for _, b := range Baselines() {
			r := Replay(b.Name, counts, time.Minute, b.New())
			if r.ColdStarts < 0 || r.IdleMinutes < 0 || int64(r.ColdStarts) > r.Invocations {
				t.Fatalf("%s: %+v", b.Name, r)
			}
		}
	})
}
