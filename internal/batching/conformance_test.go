package batching_test

import (
	"testing"

	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/batching/batchingtest"
)

func TestConformance(t *testing.T) {
	for _, name := range batching.Names() {
		t.Run(name, func(t *testing.T) {
			cfg := batching.DefaultConfig()
			cfg.Policy = name
			cfg.MLProxy.RefreshInterval = 0
			batchingtest.Run(t, func() batching.Policy {
				p, err := batching.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				return p
			})
		})
	}
	t.Run("mlproxy with memoized estimates", func(t *testing.T) {
		cfg := batching.DefaultConfig()
		cfg.Policy = batching.PolicyMLProxy
		batchingtest.Run(t, func() batching.Policy {
			p, err := batching.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			return p
		})
	})
}
