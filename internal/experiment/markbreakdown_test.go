package experiment

import (
	"context"
	"math"
	"testing"

	"github.com/sloserve/sloserve/internal/trace"
)

// TestMarkBreakdownAccountsForBill: on a committed 30-minute Twitter excerpt (× 4) in the simulator's
// default setting, the split of mark's VM bill (planned, surplus, launching, other) adds up to the
// bill within 1 % (instances are billed per second with a 60 s minimum; the split samples the
// fleet every second), and the oracle, which launches instantly for each minute's peak, is cheaper
// than mark's planned share plus its surplus.
func TestMarkBreakdownAccountsForBill(t *testing.T) {
	tr, err := trace.Open("../../testdata/traces/twitter-2017-05-25-0700-30min.rps.csv")
	if err == nil {
		tr, err = tr.With(trace.Options{RateScale: 4})
	}
	if err != nil {
		t.Fatal(err)
	}
	b, s, err := MarkBreakdown(context.Background(), nil, tr)
	if err != nil {
		t.Fatal(err)
	}
	split := b.Cost["launching"] + b.Cost["planned"] + b.Cost["surplus"] + b.Cost["other"]
	t.Logf("VM $%.4f split $%.4f %v oracle $%.4f launches %v", s.CostUSD.VM, split, b.Cost, b.Oracle, b.Launches)
	if s.CostUSD.VM <= 0 || len(b.Launches) == 0 {
		t.Fatalf("VM bill $%v, launches %v: mark launched nothing", s.CostUSD.VM, b.Launches)
	}
	if math.Abs(split-s.CostUSD.VM) > 0.01*s.CostUSD.VM {
		t.Errorf("split $%.4f, VM bill $%.4f: the breakdown misses more than 1 %%", split, s.CostUSD.VM)
	}
	if b.Oracle <= 0 || b.Oracle >= b.Cost["planned"]+b.Cost["surplus"] {
		t.Errorf("oracle $%.4f, want in (0, planned + surplus = $%.4f)", b.Oracle, b.Cost["planned"]+b.Cost["surplus"])
	}
}
