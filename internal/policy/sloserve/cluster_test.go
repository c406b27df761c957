package sloserve

import (
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/profile"
)

func TestGuardProfile(t *testing.T) {
	ms := time.Millisecond
	pts := func(xs ...profile.INFlessPoint) profile.INFlessProfile {
		return profile.INFlessProfile{Model: "m", Points: xs}
	}
	p := func(c, g, b int, d time.Duration) profile.INFlessPoint {
		return profile.INFlessPoint{CPU: c, GPU: g, Batch: b, Latency: d}
	}
	tests := []struct {
		name   string
		in     profile.INFlessProfile
		limit  time.Duration
		offset float64
		want   int // points kept
	}{
		{"fast b=1 kept", pts(p(2, 0, 1, 100*ms), p(2, 20, 1, 120*ms)), 160 * ms, 0.1, 2},
		{"slow b=1 dropped", pts(p(2, 0, 1, 180*ms), p(2, 20, 1, 126*ms)), 160 * ms, 0.1, 1},
		{"offset counts", pts(p(2, 0, 1, 150*ms), p(2, 20, 1, 126*ms)), 160 * ms, 0.1, 1},
		{"b>1 untouched", pts(p(2, 20, 1, 126*ms), p(2, 20, 2, 190*ms)), 160 * ms, 0.1, 2},
		{"no b=1 left: keep all", pts(p(2, 0, 1, 188*ms), p(4, 0, 1, 170*ms), p(4, 0, 2, 200*ms)), 160 * ms, 0.1, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := guardProfile(tc.in, tc.limit, tc.offset)
			if len(got.Points) != tc.want {
				t.Errorf("kept %d points %v, want %d", len(got.Points), got.Points, tc.want)
			}
			if len(tc.in.Points) == 0 || got.Model != tc.in.Model {
				t.Errorf("model %q, want %q", got.Model, tc.in.Model)
			}
		})
	}
}
