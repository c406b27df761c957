package profile

import (
	"fmt"
	"sort"
)

// Backend is a model's service-time curve on one instance type, with the number of batches the
// instance serves concurrently (InferAll's vm_max_slots; 1 for a single-threaded server).
type Backend struct {
	Curve Curve
	// Slots is the number of concurrent batches (≥ 1).
	Slots int
}

// MemoryCurves gives the service-time curve of a serverless function as a function of its memory.
type MemoryCurves interface {
	// At returns the curve with memoryMB of memory, or an error naming why there is none.
	At(memoryMB int) (Curve, error)
}

// Model is a model's profile: service time per batch size on every instance type it can run on,
// and on the serverless tier as a function of memory.
type Model struct {
	// Name is the model's name.
	Name string
	// VM maps an instance type's catalog name to the model's backend on it.
	VM map[string]Backend
	// Serverless is the model's curve per function memory; nil when it cannot run serverless.
	Serverless MemoryCurves
}

// Types returns the instance types the model has a profile for, sorted.
func (m Model) Types() []string {
	out := make([]string, 0, len(m.VM))
	for t := range m.VM {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// MemoryTable is a set of curves measured at some memory sizes. At returns the measured curve for
// a measured size; for other sizes it scales the nearest measured curve below (or the smallest)
// by the CPU share, since CPU is proportional to memory on Lambda (time ∝ measured/asked,
// capped at twice as fast as measured: more memory stops helping a single-threaded model).
type MemoryTable map[int]Curve

// At implements MemoryCurves.
func (t MemoryTable) At(memoryMB int) (Curve, error) {
	if c, ok := t[memoryMB]; ok {
		return c, nil
	}
	if len(t) == 0 || memoryMB <= 0 {
		return Curve{}, fmt.Errorf("profile: no serverless curve for %d MB", memoryMB)
	}
	mems := make([]int, 0, len(t))
	for m := range t {
		mems = append(mems, m)
	}
	sort.Ints(mems)
	ref := mems[0]
	for _, m := range mems {
		if m <= memoryMB {
			ref = m
		}
	}
	f := float64(ref) / float64(memoryMB)
	if f < 0.5 {
		f = 0.5
	}
	return t[ref].Scaled(f), nil
}

// Scaled returns c with every service time multiplied by f (> 0).
func (c Curve) Scaled(f float64) Curve {
	ps := make([]Point, len(c.points))
	for i, p := range c.points {
		ps[i] = Point{Batch: p.Batch, Time: max(1, durationOf(float64(p.Time)*f))}
	}
	return Curve{points: ps}
}
