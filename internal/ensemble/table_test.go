package ensemble

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

func readFixture(t *testing.T) *ClassTable {
	t.Helper()
	f, err := os.Open("testdata/class-table.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tab, err := ReadClassTable(f, 50)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func TestReadClassTable(t *testing.T) {
	tab := readFixture(t)
	want := &ClassTable{
		Models:  []string{"fast", "slow", "mid"},
		Classes: []string{"c1", "c2", "c3"},
		Rate:    [][]float64{{0.8, 0.6, 0.7}, {0.9, 0.5, 0.9}, {0.6, 0.9, 0.6}},
	}
	if !reflect.DeepEqual(tab, want) {
		t.Errorf("table (-want +got):\n-%+v\n+%+v", want, tab)
	}
	if got := tab.Accuracy(1); got < 0.7666 || got > 0.7667 {
		t.Errorf("Accuracy(slow) = %v, want 0.7667", got)
	}
}

func TestReadClassTableErrors(t *testing.T) {
	tests := map[string]string{
		"empty":            "",
		"too many correct": "a,c1,51\n",
		"negative":         "a,c1,-1\n",
		"not a number":     "a,c1,x\n",
		"duplicate":        "a,c1,1\na,c1,2\n",
		"missing class":    "a,c1,1\na,c2,2\nb,c1,3\n",
		"wrong fields":     "a,c1\n",
		"empty model":      ",c1,3\n",
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := ReadClassTable(strings.NewReader(in), 50); err == nil {
				t.Errorf("ReadClassTable(%q) accepted bad input", in)
			}
		})
	}
}

func FuzzReadClassTable(f *testing.F) {
	b, err := os.ReadFile("testdata/class-table.csv")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("a,c1,1\n"))
	f.Add([]byte("a,\"c\n1\",1\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		tab, err := ReadClassTable(strings.NewReader(string(in)), 50)
		if err != nil {
			return
		}
		for m := range tab.Models {
			if len(tab.Rate[m]) != len(tab.Classes) {
				t.Fatalf("model %d has %d rates for %d classes", m, len(tab.Rate[m]), len(tab.Classes))
			}
			for _, r := range tab.Rate[m] {
				if r < 0 || r > 1 {
					t.Fatalf("rate %v outside [0, 1]", r)
				}
			}
		}
	})
}

func fixturePool(tab *ClassTable) []Model {
	pool := []Model{
		{Name: "fast", Latency: 10 * time.Millisecond, PackingFactor: 8},
		{Name: "slow", Latency: 50 * time.Millisecond, PackingFactor: 1},
		{Name: "mid", Latency: 20 * time.Millisecond, PackingFactor: 3},
	}
	for i := range pool {
		pool[i].Accuracy = tab.Accuracy(tab.ModelIndex(pool[i].Name))
	}
	return pool
}

func TestSimulateDeterministic(t *testing.T) {
	tab := readFixture(t)
	pool := fixturePool(tab)
	c := Constraint{Latency: 60 * time.Millisecond, Accuracy: 0.8}
	s := Strategy{Name: "dyn", Models: []string{"fast", "slow", "mid"}, Dynamic: true, Weighted: true}
	cfg := DefaultSimConfig(5, 20000)
	a, err := Simulate(tab, pool, s, c, DefaultConfig(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Simulate(tab, pool, s, c, DefaultConfig(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("same seed, different results (-want +got):\n-%+v\n+%+v", a, b)
	}
	cfg.Seed = 6
	if d, _ := Simulate(tab, pool, s, c, DefaultConfig(), cfg); d == a {
		t.Errorf("different seeds gave identical results %+v", d)
	}
}

// TestSimulateSingleModelAccuracy checks that a single model's simulated accuracy matches its
// per-class table (classes are drawn uniformly), whatever the copula correlation.
func TestSimulateSingleModelAccuracy(t *testing.T) {
	tab := readFixture(t)
	pool := fixturePool(tab)
	for _, rho := range []float64{0, 0.6} {
		cfg := DefaultSimConfig(9, 60000)
		cfg.Correlation = rho
		r, err := Simulate(tab, pool, Strategy{Name: "slow", Models: []string{"slow"}}, Constraint{time.Second, 0.5}, DefaultConfig(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if want := tab.Accuracy(1); r.Accuracy < want-0.01 || r.Accuracy > want+0.01 {
			t.Errorf("rho %v: accuracy (-want +got):\n-%.4f\n+%.4f", rho, want, r.Accuracy)
		}
		if r.MeanModels != 1 || r.LatencyMS != 50 {
			t.Errorf("rho %v: mean models %v latency %v, want 1 and 50", rho, r.MeanModels, r.LatencyMS)
		}
	}
}

func TestSimulateRejectsBadInput(t *testing.T) {
	tab := readFixture(t)
	pool := fixturePool(tab)
	c := Constraint{time.Second, 0.5}
	good := DefaultSimConfig(1, 10)
	if _, err := Simulate(tab, pool, Strategy{Name: "x", Models: []string{"nope"}}, c, DefaultConfig(), good); err == nil {
		t.Error("accepted a model outside the pool")
	}
	if _, err := Simulate(tab, append(pool, Model{Name: "ghost", Latency: 1, Accuracy: 0.5, PackingFactor: 1}), Strategy{Name: "x", Models: []string{"fast"}}, c, DefaultConfig(), good); err == nil {
		t.Error("accepted a pool model outside the table")
	}
	bad := good
	bad.Correlation = 1
	if _, err := Simulate(tab, pool, Strategy{Name: "x", Models: []string{"fast"}}, c, DefaultConfig(), bad); err == nil {
		t.Error("accepted correlation 1")
	}
}
