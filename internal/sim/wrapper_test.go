package sim

import (
	"context"
	"reflect"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/slo"
)

// TestOffsetBatchingMatchesOpaque: the batching the engine drives on offsets — on the VM queue
// MLProxy's (a batching.OffsetPolicy) and sloserve's, its reasons prefixed (a batching.Wrapper
// the engine unwraps to the fixed policy or MLProxy); on the serverless queue BATCH's buffer and
// sloserve's buffer with its deadline guard — runs summary for summary as the same policy driven
// on times behind opaque (which hides its type and Unwrap), on a load that queues.
func TestOffsetBatchingMatchesOpaque(t *testing.T) {
	for _, c := range []struct {
		policy, options string
		serverless      bool
	}{
		{"mlproxy", "", false}, {"sloserve", "", false}, {"sloserve", "vm_batching: mlproxy", false},
		{"batch", "", true}, {"sloserve", "tier: serverless", true},
	} {
		cat := cost.DefaultCatalog()
		cfg := DefaultConfig()
		model := DefaultModel()
		if !c.serverless {
			model.Serverless = nil // every request on the VM queue
		}
		env := Env{Catalog: &cat, Model: model, SLO: cfg.SLO, Load: LoadStats{MeanRPS: 100, PeakRPS: 150}}
		env.Decode = func(v any) error { return yaml.Unmarshal([]byte(c.options), v) }
		run := func(hide bool) slo.Summary {
			p, err := New(c.policy, env)
			if err != nil {
				t.Fatal(err)
			}
			b := &p.Batching
			if c.serverless {
				b = &p.Serverless.Batching
			}
			_, wraps := (*b).(batching.Wrapper)
			_, offsets := batching.Innermost(*b).(batching.OffsetPolicy)
			if !wraps && !offsets {
				t.Fatalf("%s %q: its batching %T neither wraps nor decides on offsets: the test compares nothing", c.policy, c.options, *b)
			}
			if hide {
				*b = opaque{*b}
			}
			res, err := Run(context.Background(), cfg, &cat, env.Model, p, newPoisson(300, 40000, 8))
			if err != nil {
				t.Fatal(err)
			}
			return res.Summary
		}
		fast, slow := run(false), run(true)
		if !reflect.DeepEqual(fast, slow) {
			t.Errorf("%s %q: on offsets\n%+v\non times\n%+v", c.policy, c.options, fast, slow)
		}
		if (c.policy == "mlproxy" || c.serverless) && fast.MeanBatchSize <= 1 {
			t.Errorf("%s %q: mean batch %v: the load does not batch", c.policy, c.options, fast.MeanBatchSize)
		}
		if c.serverless && fast.ServedBy.Serverless == 0 {
			t.Errorf("%s %q: nothing served on the serverless tier", c.policy, c.options)
		}
	}
}
