package keepalive

import (
	"fmt"
	"math"
	"time"
)

// LSTHConfig configures the Long-Short-Term Histogram policy.
type LSTHConfig struct {
	HistogramConfig
	// Long is the long-term window (INFless §5.2: 24 hours, the diurnal period); > Short.
	Long time.Duration
	// Short is the short-term window (INFless §5.2: 1 hour); > 0.
	Short time.Duration
	// Gamma weighs the long-term windows against the short-term ones (INFless: γ = 0.5); in [0, 1].
	Gamma float64
	// MixWindows selects §3.5's formulas read literally: each histogram's own hybrid windows,
	// mixed (pre-warm = γ L_prewarm + (1−γ) S_prewarm, keep-alive likewise). It has 2.4× HHP's
	// cold starts on the Azure traces (docs/keepalive.md) and is kept for comparison only; the
	// default (false) is the two-stage combination of LSTH.Windows.
	MixWindows bool
}

// DefaultLSTHConfig returns INFless's settings: 24 h and 1 h histograms, γ = 0.5, and HHP's
// hybrid-histogram settings (DefaultHistogramConfig: 1-minute bins over 4 hours, 5th/99th
// percentiles, 10 % margin, CV and out-of-bounds tests), combined in two stages (LSTH.Windows).
// The windows are durations of history; the bins' range stays HHP's 4 hours (a 24 h range
// makes the 99th percentile the day's longest gap, which kept bursty functions loaded for hours).
func DefaultLSTHConfig() LSTHConfig {
	return LSTHConfig{HistogramConfig: DefaultHistogramConfig(), Long: 24 * time.Hour, Short: time.Hour, Gamma: 0.5}
}

// Validate reports the first field of c that is out of range.
func (c LSTHConfig) Validate() error {
	if err := c.HistogramConfig.Validate(); err != nil {
		return err
	}
	switch {
	case c.Short <= 0:
		return fmt.Errorf("keepalive.short: must be > 0, got %v", c.Short)
	case c.Long <= c.Short:
		return fmt.Errorf("keepalive.long: must be > short %v, got %v", c.Short, c.Long)
	case !(c.Gamma >= 0 && c.Gamma <= 1):
		return fmt.Errorf("keepalive.gamma: must be in [0, 1], got %v", c.Gamma)
	}
	return nil
}

// LSTH is INFless's Long-Short-Term Histogram policy (§3.5): idle times of the last 24 hours
// (the periodic pattern) and of the last hour (the recent one) feed two histograms with HHP's
// bins; the head of the idle-time distribution selects the pre-warm window, the tail the
// keep-alive window, and the long and short keep-alive windows are mixed with weight γ:
//
//	keep-alive = γ·L_keepalive + (1 − γ)·S_keepalive.
//
// §3.5 does not say how the two histograms' windows are taken and combined beyond that
// formula; Windows combines them in two stages, which is what beats HHP on both cold starts and
// idle time on the Azure traces (the literal reading, MixWindows, does not: docs/keepalive.md).
type LSTH struct {
	cfg         LSTHConfig
	long, short *histogram
	scratch     histogram // conditional view of long or short (Windows)
	// linger is the burst stage (BinWidth × (1 + Margin)); from the first bin that begins
	// after it; lastBeyond the most recent idle time in bin from or later.
	linger     time.Duration
	from       int
	lastBeyond time.Duration
	last       time.Time
	seen       bool
}

var _ Policy = (*LSTH)(nil)

// NewLSTH returns an LSTH policy with no history.
func NewLSTH(cfg LSTHConfig) (*LSTH, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	linger := time.Duration(math.Round(float64(cfg.BinWidth) * (1 + cfg.Margin)))
	return &LSTH{cfg: cfg,
		long:   newHistogram(cfg.BinWidth, cfg.Range, cfg.Long),
		short:  newHistogram(cfg.BinWidth, cfg.Range, cfg.Short),
		linger: linger, from: int((linger + cfg.BinWidth - 1) / cfg.BinWidth)}, nil
}

// Observe records an invocation busy from start to end; the time since the previous
// invocation's end is an idle time.
func (p *LSTH) Observe(start, end time.Time) {
	if p.seen {
		idle := start.Sub(p.last)
		p.long.add(start, idle)
		p.short.add(start, idle)
		if idle >= time.Duration(p.from)*p.cfg.BinWidth {
			p.lastBeyond = idle
		}
	}
	if end.Before(start) {
		end = start
	}
	p.last, p.seen = end, true
}

// Windows returns the windows that apply after the last invocation, in two stages.
//
// The burst stage: on per-minute traces many idle times fall in the first bin (the next minute
// is busy too: 33–99 % of them on five of the six Azure traces), so the 5th percentile of the
// whole distribution is 0 — HHP never pre-warms and keeps the instance loaded through every
// pause — and on the busiest trace (fn4) its 99th percentile is that bin too, a 66 s
// keep-alive after which every real pause is a cold start. Those idle times are §3.5's
// short-term burst going on, not pauses. The instance therefore lingers for the keep-alive HHP
// gives a first-bin tail, BinWidth × (1 + Margin) = 66 s, and the rest is decided on the idle
// times in the bins that begin after the linger (≥ 2 min with 1-min bins): the pauses.
//
// The pause stage: the long histogram's pauses give the head and tail exactly as HHP does
// (hybridWindows, with its uncertain and out-of-bounds cases); the instance is unloaded after
// the linger and reloaded at L_prewarm = head × 0.9 (HHP's pre-warm semantics). The short
// histogram's pauses give S's tail; both keep-alive windows are measured from that common
// pre-warm point, L_keepalive = L_tail − L_prewarm, S_keepalive = max(S_tail − L_prewarm, 0),
// and mixed with γ as §3.5 says. The pre-warm is the long one alone: the head of an hour's
// handful of pauses is their minimum, which says little about the next pause (mixing it in
// reloaded too late and tripled the cold starts on the Azure traces, docs/keepalive.md).
//
// Fallbacks, all HHP's: with no idle time yet, the standard keep-alive (4 h); pauses too flat
// (CV test) give the standard keep-alive from 0, pauses mostly beyond the range the forecast
// of the next pause (the last pause, ARIMA(0,1,0)); with no pause in the long window, the long
// histogram's own windows (a keep-alive covering the burst) decide; with no pause in the short
// window (the last hour was one busy stretch, or silence), the long pauses decide alone. A
// pre-warm inside the linger makes one interval, loaded from 0. The CV and out-of-bounds tests
// are applied to the pauses, not to the whole long histogram, whose first-bin mass is the
// burst: gating on the whole histogram changed the Azure totals by 2 cold starts and 1 idle
// minute, and its out-of-bounds forecast, the last idle time, is often 0 (a burst).
func (p *LSTH) Windows(now time.Time) Windows {
	p.long.evict(now)
	p.short.evict(now)
	if p.cfg.MixWindows {
		return p.mixWindows()
	}
	lw, _ := hybridWindows(p.long, p.cfg.HistogramConfig)
	if p.long.total == 0 {
		lw.Reason = "long-term: " + lw.Reason
		return lw
	}
	lc := p.long.beyondInto(&p.scratch, p.from, p.lastBeyond)
	if lc.total == 0 {
		lw.Reason = fmt.Sprintf("long-term, every idle time within the linger %v: %s", p.linger, lw.Reason)
		return lw
	}
	cw, _ := hybridWindows(lc, p.cfg.HistogramConfig)
	pre, lka := cw.PreWarm, cw.KeepAlive
	ka := lka
	short := "no pause in the short window"
	if sc := p.short.beyondInto(&p.scratch, p.from, p.lastBeyond); sc.total > 0 {
		sw, _ := hybridWindows(sc, p.cfg.HistogramConfig)
		ska := max(sw.PreWarm+sw.KeepAlive-pre, 0)
		ka = time.Duration(p.cfg.Gamma*float64(lka) + (1-p.cfg.Gamma)*float64(ska))
		short = fmt.Sprintf("short keep-alive %v (%s)", ska, sw.Reason)
	}
	w := Windows{PreWarm: pre, KeepAlive: ka, Linger: p.linger}
	if pre <= p.linger {
		w = Windows{KeepAlive: pre + ka}
	}
	w.Reason = fmt.Sprintf("two-stage γ=%.2g: linger %v; pauses: pre-warm %v, long keep-alive %v (%s); %s",
		p.cfg.Gamma, p.linger, pre, lka, cw.Reason, short)
	return w
}

// mixWindows is §3.5 read literally (MixWindows): each histogram decides as HHP does
// (hybridWindows: percentiles, or the standard keep-alive when uncertain, or a forecast when
// out of bounds) and the two decisions are mixed with weight γ. A short histogram with no idle
// time at all (the last hour was one busy stretch, or the function has been silent for an
// hour) carries no short-term signal; the long one then decides alone.
func (p *LSTH) mixWindows() Windows {
	lw, _ := hybridWindows(p.long, p.cfg.HistogramConfig)
	if p.short.total == 0 {
		lw.Reason = "long-term only (no idle time in the short window): " + lw.Reason
		return lw
	}
	sw, _ := hybridWindows(p.short, p.cfg.HistogramConfig)
	g := p.cfg.Gamma
	mix := func(l, s time.Duration) time.Duration { return time.Duration(g*float64(l) + (1-g)*float64(s)) }
	return Windows{PreWarm: mix(lw.PreWarm, sw.PreWarm), KeepAlive: mix(lw.KeepAlive, sw.KeepAlive),
		Reason: fmt.Sprintf("γ=%.2g: long (%v, %v; %s), short (%v, %v; %s)", g, lw.PreWarm, lw.KeepAlive, lw.Reason, sw.PreWarm, sw.KeepAlive, sw.Reason)}
}

// ScaledLSTHConfig is DefaultLSTHConfig on a clock whose unit stands for INFless's one minute:
// the one-minute bins, 4 h range and fallback and the 24 h / 1 h windows are scaled by unit / 1
// min (the live controller's 5 s unit: 5 s bins, 20 min fallback keep-alive, 2 h and 5 min
// windows); percentiles, margins and γ are the paper's. A unit of one minute is the paper's.
func ScaledLSTHConfig(unit time.Duration) LSTHConfig {
	c := DefaultLSTHConfig()
	k := float64(unit) / float64(time.Minute)
	scale := func(d time.Duration) time.Duration { return max(time.Duration(float64(d)*k), time.Millisecond) }
	c.BinWidth, c.Range, c.Fallback = scale(c.BinWidth), scale(c.Range), scale(c.Fallback)
	c.Long, c.Short = scale(c.Long), scale(c.Short)
	return c
}
