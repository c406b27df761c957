package batching_test

import (
	"testing"

	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/batching/batchingtest"
)

func TestConformance(t *testing.T) {
	configs := map[string]func(*batching.Config){
		"mlproxy with memoized estimates": func(c *batching.Config) { c.Policy = batching.PolicyMLProxy },
	}
	for _, name := range batching.Names() {
		configs[name] = func(c *batching.Config) { c.Policy = name; c.MLProxy.RefreshInterval = 0 }
	}
	for name, mutate := range configs {
		t.Run(name, func(t *testing.T) {
			cfg := batching.DefaultConfig()
			mutate(&cfg)
			if _, err := batching.New(cfg); err != nil {
				t.Fatal(err)
			}
			batchingtest.Run(t, func() batching.Policy {
				p, _ := batching.New(cfg) // validated above
				return p
			})
		})
	}
}
