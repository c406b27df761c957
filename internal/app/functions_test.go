package app

import (
	"math"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/policy"
)

// TestStartFunctionTier runs the sloserve policy with the function tier (serverless.enabled) on
// real worker processes, its base-load tier forced to serverless (policies.sloserve.tier): every
// request goes through BATCH's buffer to function instances that cold-start as processes (one
// pre-warmed at start), and every invocation is billed per GB-s at 1 ms plus the per-request
// price — the controller's serverless cost is the tier's bill.
func TestStartFunctionTier(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	m := config.DefaultModel("m")
	m.InstanceType.RPS = 200
	cfg := localStackConfig(m)
	cfg.Controller.Policy = config.ControllerSloserve
	cfg.Controller.SampleInterval = 20 * time.Millisecond
	cfg.Controller.Unit = 100 * time.Millisecond
	cfg.Serverless = config.Serverless{Enabled: true, MemoryMB: 1769, MaxInstances: 2}
	cfg.Policies = policy.Sections{}
	if err := cfg.Policies.Set("sloserve", "{tier: serverless}"); err != nil {
		t.Fatal(err)
	}
	_, st := startFake(t, cfg, 60*time.Second)
	if st.Functions == nil {
		t.Fatal("serverless.enabled with controller sloserve: no function tier")
	}
	if s := st.Functions.Stats("m"); s.ColdStarts != 1 || s.Live != 1 || s.ColdStartSeconds <= 0 {
		t.Errorf("after start: %+v; want one measured cold start (the pre-warm), one live instance", s)
	}
	const n = 12
	postOnes(t, st.URL, n)
	c, ok := st.Gateway.FunctionCounts("m")
	if !ok || c.Served != n || c.Spilled != n || c.VM != 0 {
		t.Errorf("routing %+v (ok %v); want all %d served by the function tier", c, ok, n)
	}
	s := st.Functions.Stats("m")
	if s.Invocations < 1 || s.Invocations > n || s.MemoryMB != 1769 {
		t.Errorf("function stats %+v; want 1..%d invocations at 1769 MB", s, n)
	}
	tier := cost.DefaultCatalog().Serverless
	if min := float64(s.Invocations)*tier.PricePerInvocation + s.BilledGBSeconds*tier.PricePerGBSecond; math.Abs(s.CostUSD-min) > 1e-12 {
		t.Errorf("bill %g, want invocations × per-request + GB-s × price = %g", s.CostUSD, min)
	}
	if s.BilledGBSeconds <= 0 || s.BilledGBSeconds < float64(s.Invocations)*1769.0/1024*0.001 {
		t.Errorf("billed %g GB-s for %d invocations; want at least 1 ms of 1769 MB each", s.BilledGBSeconds, s.Invocations)
	}
	if got := st.Controller.CostUSD("m"); got.Serverless != s.CostUSD || got.Total < got.Serverless {
		t.Errorf("controller cost %+v; want serverless = the tier's bill %g", got, s.CostUSD)
	}
	if plans := st.FunctionPlans("m"); len(plans) == 0 || plans[0].Plan.MemoryMB != 1769 {
		t.Errorf("BATCH plans %+v; want the initial plan at 1769 MB", plans)
	}
}
