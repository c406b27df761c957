package profile

import (
	"fmt"
	"sort"
	"time"
)

// Point is one measured batch size and its service time.
type Point struct {
	Batch int
	Time  time.Duration
}

// Curve is the service time of a batch as a function of its size on one instance type,
// linear between measured points and extrapolated by the last segment's slope beyond them.
type Curve struct {
	points []Point
}

// NewCurve returns a Curve through the given points; batch sizes must be positive and distinct.
func NewCurve(points []Point) (Curve, error) {
	if len(points) == 0 {
		return Curve{}, fmt.Errorf("profile curve: no points")
	}
	ps := append([]Point(nil), points...)
	sort.Slice(ps, func(i, j int) bool { return ps[i].Batch < ps[j].Batch })
	for i, p := range ps {
		if p.Batch <= 0 || p.Time <= 0 {
			return Curve{}, fmt.Errorf("profile curve: point %d: batch %d time %v must be positive", i, p.Batch, p.Time)
		}
		if i > 0 && ps[i-1].Batch == p.Batch {
			return Curve{}, fmt.Errorf("profile curve: batch %d appears twice", p.Batch)
		}
	}
	return Curve{points: ps}, nil
}

// Points returns the measured points, smallest batch first.
func (c Curve) Points() []Point { return append([]Point(nil), c.points...) }

// MaxMeasured returns the largest measured batch size.
func (c Curve) MaxMeasured() int {
	if len(c.points) == 0 {
		return 0
	}
	return c.points[len(c.points)-1].Batch
}

// ServiceTime returns the time to serve a batch of size b (b ≥ 1).
func (c Curve) ServiceTime(b int) time.Duration {
	ps := c.points
	switch {
	case len(ps) == 0:
		return 0
	case len(ps) == 1:
		return time.Duration(float64(ps[0].Time) * float64(b) / float64(ps[0].Batch))
	}
	i := sort.Search(len(ps), func(i int) bool { return ps[i].Batch >= b })
	if i < len(ps) && ps[i].Batch == b {
		return ps[i].Time
	}
	var lo, hi Point
	switch {
	case i == 0:
		lo, hi = ps[0], ps[1]
	case i == len(ps):
		lo, hi = ps[len(ps)-2], ps[len(ps)-1]
	default:
		lo, hi = ps[i-1], ps[i]
	}
	slope := float64(hi.Time-lo.Time) / float64(hi.Batch-lo.Batch)
	t := time.Duration(float64(lo.Time) + slope*float64(b-lo.Batch))
	if t < time.Microsecond {
		t = time.Microsecond
	}
	return t
}
