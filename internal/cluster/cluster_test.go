package cluster

import (
	"errors"
	"math"
	"testing"
)

func TestPlaceRelease(t *testing.T) {
	c := New(2, Resources{CPU: 8, GPU: 100})
	steps := []struct {
		name    string
		release bool
		server  int
		r       Resources
		wantErr error
		free0   Resources
	}{
		{"place fits", false, 0, Resources{CPU: 4, GPU: 50}, nil, Resources{CPU: 4, GPU: 50}},
		{"place over CPU", false, 0, Resources{CPU: 5}, ErrNoRoom, Resources{CPU: 4, GPU: 50}},
		{"place exact rest", false, 0, Resources{CPU: 4, GPU: 50}, nil, Resources{}},
		{"release part", true, 0, Resources{CPU: 4, GPU: 50}, nil, Resources{CPU: 4, GPU: 50}},
	}
	for _, s := range steps {
		var err error
		if s.release {
			err = c.Release(s.server, s.r)
		} else {
			err = c.Place(s.server, s.r)
		}
		if !errors.Is(err, s.wantErr) {
			t.Fatalf("%s: err %v, want %v", s.name, err, s.wantErr)
		}
		if got := c.Free(0); got != s.free0 {
			t.Fatalf("%s: server 0 free %+v, want %+v", s.name, got, s.free0)
		}
	}
	if err := c.Place(7, Resources{CPU: 1}); err == nil {
		t.Error("placing on a missing server succeeded")
	}
	if err := c.Release(1, Resources{CPU: 1}); err == nil {
		t.Error("releasing more than allocated succeeded")
	}
}

func TestFreeVectorsLowestServer(t *testing.T) {
	c := New(4, Resources{CPU: 8})
	if err := c.Place(0, Resources{CPU: 2}); err != nil {
		t.Fatal(err)
	}
	got := map[Resources]FreeVector{}
	c.FreeVectors(func(fv FreeVector) bool { got[fv.Free] = fv; return true })
	want := map[Resources]FreeVector{
		{CPU: 6}: {Free: Resources{CPU: 6}, Server: 0, Count: 1},
		{CPU: 8}: {Free: Resources{CPU: 8}, Server: 1, Count: 3},
	}
	if len(got) != len(want) {
		t.Fatalf("FreeVectors = %+v, want %+v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("vector %+v = %+v, want %+v", k, got[k], v)
		}
	}
}

func TestFragmentRatio(t *testing.T) {
	c := New(3, Resources{CPU: 10, GPU: 0})
	if got := c.FragmentRatio(1); got != 0 {
		t.Errorf("idle cluster ratio %v, want 0", got)
	}
	_ = c.Place(0, Resources{CPU: 10})
	_ = c.Place(1, Resources{CPU: 5})
	// Active servers 0 and 1: 5 of 20 units free; server 2 is idle and does not count.
	if got := c.FragmentRatio(1); math.Abs(got-0.25) > 1e-12 {
		t.Errorf("ratio %v, want 0.25", got)
	}
	if n := c.ActiveServers(); n != 2 {
		t.Errorf("active servers %d, want 2", n)
	}
	d := c.Clone()
	_ = d.Place(2, Resources{CPU: 1})
	if c.ActiveServers() != 2 {
		t.Error("placing on a clone changed the original")
	}
}

func TestActiveTotals(t *testing.T) {
	c := New(3, Resources{CPU: 16, GPU: 100})
	if err := c.Place(0, Resources{CPU: 4, GPU: 10}); err != nil {
		t.Fatal(err)
	}
	if err := c.Place(2, Resources{CPU: 2}); err != nil {
		t.Fatal(err)
	}
	used, capacity := c.ActiveTotals()
	wantUsed, wantCap := Resources{CPU: 6, GPU: 10}, Resources{CPU: 32, GPU: 200}
	if used != wantUsed || capacity != wantCap {
		t.Errorf("ActiveTotals (-want +got):\n-%+v %+v\n+%+v %+v", wantUsed, wantCap, used, capacity)
	}
}
