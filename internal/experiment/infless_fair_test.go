package experiment

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestInflessFairGain is INFless's headline against the fair baselines (issue #17), on the
// fixture's made-up profiles and bursts, 10 minutes at a 200 rps peak, split in halves: the tuned
// rows choose their options on the first five minutes and every row runs on the last five. The
// bands: INFless meets every function's 95 % target; it serves 1.5× or more the paper's uniform
// row's requests per unit of resource (the paper's 2.6–3.8×, issue #17's FLOPS-priced
// strawman) but within [0.85, 1.3]× of the tuned uniform baseline's (the fair gain; issue #17
// measured 1.10–1.39× priced by the dominant share, 0.95–1.04× with the 30 s hold too), and
// within [0.6, 0.95]× of uniform-fair's (the 30 s hold alone packs tighter than INFless, at the
// price of ssd's target, which is why the tuner picks a longer keep-alive).
// It fails when uniform picks its worst configuration (1.81× the tuned row), keeps instances 10×
// too long (1.03× uniform-fair), or when INFless plans without its +10 % offset (a function at
// 0.9375). Lending slower configurations moves none of these bands: TestLend and TestINFlessLend
// catch that (docs/infless.md).
func TestInflessFairGain(t *testing.T) {
	profiles, traces := fixtureINFless()
	runs, err := InflessFair(context.Background(), profiles, traces, "made-up", 0, 10*time.Minute, 200, 0)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	writeLoadTable(&b, runs)
	t.Logf("\n%s", b.String())
	for _, r := range runs {
		if r.Name != "infless" {
			continue
		}
		for _, f := range r.Functions {
			if f.SLOAttainment < 0.95 {
				t.Errorf("infless: function on %s attains %.4f < 0.95", f.Trace, f.SLOAttainment)
			}
		}
	}
	if g := FairGain(runs, "uniform"); g < 1.5 {
		t.Errorf("infless over the paper's uniform row %.2f×, want ≥ 1.5×", g)
	}
	if g := FairGain(runs, "uniform-tuned"); g < 0.85 || g > 1.3 {
		t.Errorf("infless over uniform-tuned %.2f×, want in [0.85, 1.3]×", g)
	}
	// uniform-fair holds instances 30 s, as INFless does: it serves more per resource than
	// INFless (and misses ssd's target), which a keep-alive ten times longer would hide.
	if g := FairGain(runs, "uniform-fair"); g < 0.6 || g > 0.95 {
		t.Errorf("infless over uniform-fair %.2f×, want in [0.6, 0.95]×", g)
	}
}
