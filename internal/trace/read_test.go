package trace

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestReadSeries(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		wantStep  time.Duration
		wantRates []float64
		wantErr   string
	}{
		{name: "per second counts", in: "t_s,count\n0,44\n1,46\n", wantStep: time.Second, wantRates: []float64{44, 46}},
		{name: "per minute counts", in: "t_min,count\n0,120\n1,0\n2,30\n", wantStep: time.Minute, wantRates: []float64{2, 0, 0.5}},
		{name: "step rps", in: "step,rps\n0,7\n1,14\n", wantStep: time.Second, wantRates: []float64{7, 14}},
		{name: "gaps are zero, blank lines and CRLF ok", in: "t_s,count\r\n0,1\r\n\r\n3,2\r\n", wantStep: time.Second, wantRates: []float64{1, 0, 0, 2}},
		{name: "BOM and upper case header", in: "\ufeffT_S,COUNT\n0,1\n", wantStep: time.Second, wantRates: []float64{1}},
		{name: "unknown header", in: "time,value\n0,1\n", wantErr: `line 1: unknown header "time,value"`},
		{name: "empty", in: "", wantErr: "empty input"},
		{name: "no rows", in: "t_s,count\n", wantErr: "no rows"},
		{name: "missing value", in: "t_s,count\n0\n", wantErr: `line 2: want index,value, got "0"`},
		{name: "repeated index adds counts", in: "t_s,count\n0,1\n1,1\n1,2\n", wantStep: time.Second, wantRates: []float64{1, 3}},
		{name: "index decreases", in: "t_s,count\n1,1\n0,2\n", wantErr: "line 3: index 0 does not increase (previous 1)"},
		{name: "rate index repeats", in: "step,rps\n1,1\n1,2\n", wantErr: "line 3: index 1 does not increase (previous 1)"},
		{name: "negative count", in: "t_s,count\n0,-1\n", wantErr: `line 2: value "-1" must be a finite number ≥ 0`},
		{name: "NaN count", in: "t_s,count\n0,NaN\n", wantErr: `line 2: value "NaN" must be a finite number ≥ 0`},
		{name: "huge index", in: "t_s,count\n99999999999,1\n", wantErr: `line 2: index "99999999999" must be an integer in [0, 16777216)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := ReadSeries(strings.NewReader(tt.in), "x")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrFormat) {
					t.Fatalf("error (-want +got):\n-…%s… (ErrFormat)\n+%v", tt.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tr.Step != tt.wantStep || !slices.Equal(tr.Rates, tt.wantRates) {
				t.Errorf("series (-want +got):\n-%v %v\n+%v %v", tt.wantStep, tt.wantRates, tr.Step, tr.Rates)
			}
		})
	}
}

func TestReadInterarrivals(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     []time.Duration
		wantErr  string
		wantName string
	}{
		{name: "cumulative", in: "0.5\n0.25\n\n1\n", want: []time.Duration{500 * time.Millisecond, 750 * time.Millisecond, 1750 * time.Millisecond}},
		{name: "zero gaps", in: "0\n0\n", want: []time.Duration{0, 0}},
		{name: "negative", in: "0.1\n-0.1\n", wantErr: `line 2: inter-arrival "-0.1" must be a finite number of seconds ≥ 0`},
		{name: "text", in: "abc\n", wantErr: `line 1: inter-arrival "abc"`},
		{name: "too far", in: "1e12\n", wantErr: "line 1: arrival at 1e+12s is beyond"},
		{name: "empty", in: "\n\n", wantErr: "no inter-arrival times"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := ReadInterarrivals(strings.NewReader(tt.in), "x")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrFormat) {
					t.Fatalf("error (-want +got):\n-…%s… (ErrFormat)\n+%v", tt.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(tr.Times, tt.want) || tr.End != tt.want[len(tt.want)-1] || tr.IsSeries() {
				t.Errorf("arrivals (-want +got):\n-%v\n+%v (end %v)", tt.want, tr.Times, tr.End)
			}
		})
	}
}

func TestReadAzureFunctions(t *testing.T) {
	read := func(t *testing.T, match func(AzureFunction) bool) *Trace {
		t.Helper()
		f, err := os.Open("testdata/azure-2019-small.csv")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		tr, err := ReadAzureFunctions(f, "azure", match)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	all := read(t, nil)
	if all.Step != time.Minute || len(all.Rates) != 1440 {
		t.Fatalf("layout (-want +got): -1m 1440 +%v %d", all.Step, len(all.Rates))
	}
	// Minute 1: 60 + 1 + 30 invocations; minute 722: 120 + 0 + 30.
	if got, want := all.Rates[0], 91.0/60; got != want {
		t.Errorf("rate of minute 1 (-want +got): -%v +%v", want, got)
	}
	if got, want := all.Rates[721], 150.0/60; got != want {
		t.Errorf("rate of minute 722 (-want +got): -%v +%v", want, got)
	}
	one := read(t, func(f AzureFunction) bool { return f.Function == "f3" && f.Trigger == "queue" })
	if got := one.MeanRate(); got != 0.5 {
		t.Errorf("mean rate of f3 (-want +got): -0.5 +%v", got)
	}
	_, err := ReadAzureFunctions(strings.NewReader("HashOwner,HashApp,HashFunction,Trigger,1,2\no,a,f,http,1,2\n"), "x",
		func(AzureFunction) bool { return false })
	if err == nil || !strings.Contains(err.Error(), "no function matched") {
		t.Errorf("no match error (-want +got): -no function matched +%v", err)
	}
	for _, bad := range []struct{ in, want string }{
		{"HashOwner,HashApp,HashFunction,Trigger,1,3\n", `column 6 is "3", want minute 2`},
		{"Owner,HashApp,HashFunction,Trigger,1\n", `column 1 is "Owner", want "HashOwner"`},
		{"HashOwner,HashApp,HashFunction,Trigger,1,2\no,a,f,http,1\n", `minute 2 count ""`},
		{"HashOwner,HashApp,HashFunction,Trigger,1\no,a,f,http,1,2\n", "more than 5 fields"},
		{"HashOwner,HashApp,HashFunction,Trigger,1\no,a\n", "line 2: 2 fields, want 5"},
	} {
		if _, err := ReadAzureFunctions(strings.NewReader(bad.in), "x", nil); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ReadAzureFunctions(%q) error (-want +got):\n-…%s…\n+%v", bad.in, bad.want, err)
		}
	}
}

func TestReadMAP2(t *testing.T) {
	f0, err := os.Open("testdata/map-neg_D0")
	if err != nil {
		t.Fatal(err)
	}
	defer f0.Close()
	f1, err := os.Open("testdata/map-neg_D1")
	if err != nil {
		t.Fatal(err)
	}
	defer f1.Close()
	m, err := ReadMAP2(f0, f1)
	if err != nil {
		t.Fatal(err)
	}
	want := MAP2{D0: [2][2]float64{{-1, 0}, {0, -10}}, D1: [2][2]float64{{0, 1}, {10, 0}}}
	if m != want {
		t.Errorf("MAP (-want +got):\n-%v\n+%v", want, m)
	}
	for _, bad := range []struct{ d0, d1, want string }{
		{"-1,0\n0,-1\n", "0,1\n1,0\n1,1\n", "more than 2 rows"},
		{"-1,0\n", "0,1\n1,0\n", "1 rows, want 2"},
		{"-1,0,0\n0,-1\n", "0,1\n1,0\n", "want 2 comma-separated numbers"},
		{"-1,x\n0,-1\n", "0,1\n1,0\n", `column 2: "x" is not a finite number`},
		{"-1,0\n0,-1\n", "0,2\n1,0\n", "row 0 of D0+D1 sums to 1, want 0"},
		{"-1,0\n0,-1\n", "0,-1\n1,0\n", "D1[0][1] must be ≥ 0"},
		{"0,0\n0,0\n", "0,0\n0,0\n", "D0[0][0] must be < 0"},
	} {
		if _, err := ReadMAP2(strings.NewReader(bad.d0), strings.NewReader(bad.d1)); err == nil || !strings.Contains(err.Error(), bad.want) || !errors.Is(err, ErrFormat) {
			t.Errorf("ReadMAP2(%q, %q) error (-want +got):\n-…%s… (ErrFormat)\n+%v", bad.d0, bad.d1, bad.want, err)
		}
	}
}

func TestOpenFixtures(t *testing.T) {
	tests := []struct {
		file       string
		wantSeries bool
		wantLen    int
		wantMean   float64
	}{
		{"twitter-2017-05-25.first120s.csv", true, 120, 0},
		{"tw_may25_0-1.head50", false, 50, 0},
		{"azure-2019-small.csv", true, 1440, (90.0 + 0.1 + 30) / 60},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			tr, err := Open(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			n := len(tr.Times)
			if tr.IsSeries() {
				n = len(tr.Rates)
			}
			if tr.IsSeries() != tt.wantSeries || n != tt.wantLen || tr.Name != tt.file {
				t.Errorf("Open (-want +got): -series=%v len=%d %s +series=%v len=%d %s", tt.wantSeries, tt.wantLen, tt.file, tr.IsSeries(), n, tr.Name)
			}
			if tt.wantMean != 0 && math.Abs(tr.MeanRate()-tt.wantMean) > 1e-9 {
				t.Errorf("MeanRate (-want +got): -%v +%v", tt.wantMean, tr.MeanRate())
			}
		})
	}
	if _, err := Open("testdata/missing.csv"); err == nil {
		t.Errorf("Open of a missing file must fail")
	}
}

// sharedData returns the path of a file under /work/shared/data, skipping when it is absent.
func sharedData(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join("..", "..", "..", "shared", "data", rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared data %s not available (%v): run from the sloserve workspace with ../shared/data", rel, err)
	}
	return p
}

func TestSharedTraces(t *testing.T) {
	tests := []struct {
		rel      string
		series   bool
		step     time.Duration
		length   int
		meanRate float64 // requests per second, ±2 %
	}{
		{"traces/twitter-2017-05-25.rps.csv", true, time.Second, 82783, 52},
		{"traces/azure-functions/fn2.rpm.csv", true, time.Minute, 10080, 0},
		{"traces/azure-functions/burst300-3.csv", true, time.Second, 3600, 0},
		{"traces/twitter-2017-05-25-interarrivals/TW_may25_0-1", false, 0, 126294, 126294.0 / 3600},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.rel), func(t *testing.T) {
			tr, err := Open(sharedData(t, tt.rel))
			if err != nil {
				t.Fatal(err)
			}
			n := len(tr.Times)
			if tr.IsSeries() {
				n = len(tr.Rates)
			}
			if tr.IsSeries() != tt.series || tr.Step != tt.step || n != tt.length {
				t.Errorf("layout (-want +got): -%v %v %d +%v %v %d", tt.series, tt.step, tt.length, tr.IsSeries(), tr.Step, n)
			}
			if tt.meanRate > 0 && math.Abs(tr.MeanRate()/tt.meanRate-1) > 0.02 {
				t.Errorf("mean rate (-want +got): -%v +%v", tt.meanRate, tr.MeanRate())
			}
		})
	}
	for _, set := range []string{"twitter", "nys"} {
		t.Run("MAP fits "+set, func(t *testing.T) {
			dir := sharedData(t, "traces/batch-map-fits/"+set)
			for h := 1; h <= 24; h++ {
				if _, err := os.Stat(filepath.Join(dir, "MAP"+strconv.Itoa(h)+"_D0")); err != nil {
					continue
				}
				m, err := OpenMAP2(dir, h)
				if err != nil {
					t.Errorf("hour %d: %v", h, err)
					continue
				}
				if r := m.Rate(); !(r > 0) {
					t.Errorf("hour %d: rate %v", h, r)
				}
			}
		})
	}
}
