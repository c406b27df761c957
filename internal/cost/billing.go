package cost

import (
	"math"
	"time"
)

// Billable returns the charged duration of a usage of length used under rule b: rounded up to
// the granularity and at least the minimum.
func (b Billing) Billable(used time.Duration) time.Duration {
	if used < 0 {
		used = 0
	}
	if g := b.Granularity; g > 0 {
		if r := used % g; r != 0 {
			used += g - r
		}
	}
	if used < b.Minimum {
		used = b.Minimum
	}
	return used
}

// VMCost returns the dollars charged for running an instance for used at pricePerHour under b.
func VMCost(b Billing, pricePerHour float64, used time.Duration) float64 {
	return pricePerHour * b.Billable(used).Hours()
}

// InvocationCost returns the dollars charged for one serverless call that ran for used with
// memoryMB of memory (BATCH Eq. 1: per-GB-second price × memory × rounded duration + per-call price).
func (s Serverless) InvocationCost(memoryMB int, used time.Duration) float64 {
	b := Billing{Granularity: s.Granularity}
	gb := float64(memoryMB) / 1024
	return s.PricePerGBSecond*gb*b.Billable(used).Seconds() + s.PricePerInvocation
}

// CPUShare returns the fraction of one vCPU a function with memoryMB gets: proportional to memory,
// one full vCPU at FullVCPUMemoryMB.
func (s Serverless) CPUShare(memoryMB int) float64 {
	if s.FullVCPUMemoryMB <= 0 {
		return 1
	}
	return float64(memoryMB) / float64(s.FullVCPUMemoryMB)
}

// ClampMemory returns memoryMB clamped to the tier's allowed range.
func (s Serverless) ClampMemory(memoryMB int) int {
	return int(math.Max(float64(s.MinMemoryMB), math.Min(float64(s.MaxMemoryMB), float64(memoryMB))))
}
