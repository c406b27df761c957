package config

import (
	"fmt"

	"github.com/sloserve/sloserve/internal/cost"
)

// Serverless configures the live function tier (provider.TierServerless): per model and memory
// size, scale-to-zero worker processes (provider.kind local) or pods (kubernetes) billed per
// invocation at the catalog's Lambda prices, behind BATCH's buffer; the gateway spills to it
// what the VM fleet cannot finish before the deadline (MArk's Bouncer) and buffers it while an
// instance cold-starts. Only a controller policy with a serverless tier uses it (sloserve).
type Serverless struct {
	// Enabled turns the function tier on.
	Enabled bool `yaml:"enabled"`
	// MemoryMB fixes each function instance's memory (MB, 128–10240); 0 lets BATCH's optimiser
	// choose among MemorySizes. CPU share follows memory: one vCPU at 1769 MB.
	MemoryMB int `yaml:"memory_mb"`
	// MemorySizes are the memory sizes (MB) the optimiser chooses from when MemoryMB is 0;
	// empty means DefaultMemorySizes.
	MemorySizes []int `yaml:"memory_sizes"`
	// MaxInstances bounds a model's function instances (its concurrency); 0 means 4.
	MaxInstances int `yaml:"max_instances"`
}

// DefaultMemorySizes are the function memory sizes the optimiser chooses from by default:
// half a vCPU, one vCPU (1769 MB) and Lambda's 3008 MB.
var DefaultMemorySizes = []int{896, 1769, 3008}

// DefaultFunctionInstances is Serverless.MaxInstances' default.
const DefaultFunctionInstances = 4

// Memories returns the memory sizes the tier may run: MemoryMB alone, or MemorySizes (default
// DefaultMemorySizes).
func (s Serverless) Memories() []int {
	switch {
	case s.MemoryMB > 0:
		return []int{s.MemoryMB}
	case len(s.MemorySizes) > 0:
		return s.MemorySizes
	}
	return DefaultMemorySizes
}

// Instances is MaxInstances with its default.
func (s Serverless) Instances() int {
	if s.MaxInstances > 0 {
		return s.MaxInstances
	}
	return DefaultFunctionInstances
}

// Validate reports the first field out of range.
func (s Serverless) Validate() error {
	in := func(m int) bool { return m >= cost.LambdaMinMemoryMB && m <= cost.LambdaMaxMemoryMB }
	switch {
	case s.MemoryMB != 0 && !in(s.MemoryMB):
		return fmt.Errorf("serverless.memory_mb: must be 0 or in [%d, %d], got %d", cost.LambdaMinMemoryMB, cost.LambdaMaxMemoryMB, s.MemoryMB)
	case s.MaxInstances < 0:
		return fmt.Errorf("serverless.max_instances: must be ≥ 0, got %d", s.MaxInstances)
	}
	for i, m := range s.MemorySizes {
		if !in(m) {
			return fmt.Errorf("serverless.memory_sizes[%d]: must be in [%d, %d], got %d", i, cost.LambdaMinMemoryMB, cost.LambdaMaxMemoryMB, m)
		}
	}
	return nil
}
