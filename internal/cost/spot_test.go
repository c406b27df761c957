package cost

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestReadSpotPrices(t *testing.T) {
	in := "time,spot1,spot2\n1,0.04,0.06\n2,0.05,0.06\n4,0.03,0.07\n"
	got, err := ReadSpotPrices(strings.NewReader(in), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	s := got["spot1"]
	cases := []struct {
		at   time.Duration
		want float64
	}{{0, 0.04}, {30 * time.Minute, 0.04}, {time.Hour, 0.05}, {2*time.Hour + time.Minute, 0.05}, {3 * time.Hour, 0.03}, {100 * time.Hour, 0.03}}
	for _, c := range cases {
		if p := s.PriceAt(c.at); p != c.want {
			t.Errorf("PriceAt(%v) (-want +got): -%v +%v", c.at, c.want, p)
		}
	}
	if c, want := s.Cost(30*time.Minute, 3*time.Hour+30*time.Minute), 0.5*0.04+2*0.05+0.5*0.03; !near(c, want) {
		t.Errorf("Cost = %v, want %v", c, want)
	}
	for _, bad := range []string{"", "time\n", "time,a\n", "time,a\n1,x\n", "time,a\n1,-1\n", "time,a\n2,1\n1,1\n", "time,a\n1,1,1\n"} {
		if _, err := ReadSpotPrices(strings.NewReader(bad), time.Minute); err == nil {
			t.Errorf("ReadSpotPrices(%q) succeeded, want an error", bad)
		}
	}
}

func TestReadCocktailSpotPrices(t *testing.T) {
	f, err := os.Open("../../../shared/data/prices/cocktail-spot-prices.csv")
	if err != nil {
		t.Skipf("shared data absent (%v); the suite runs without it", err)
	}
	defer f.Close()
	got, err := ReadSpotPrices(f, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for col, typ := range CocktailSpotColumns {
		s, ok := got[col]
		if !ok || len(s.At) != 346 {
			t.Errorf("column %s (%s): %d steps, want 346 (347 lines with the header)", col, typ, len(s.At))
		}
	}
}

func FuzzReadSpotPrices(f *testing.F) {
	f.Add("time,spot1,spot2\n1,0.04,0.06\n2,0.05,0.06\n")
	f.Add("time,a\n0,1\n")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ReadSpotPrices(strings.NewReader(in), time.Minute)
		if err != nil {
			return
		}
		for _, s := range got {
			if len(s.At) != len(s.Price) || len(s.At) == 0 {
				t.Fatalf("series lengths %d/%d", len(s.At), len(s.Price))
			}
			_ = s.Cost(0, time.Hour)
		}
	})
}
