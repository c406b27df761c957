package trace

import (
	"bytes"
	"os"
	"testing"
)

func addFile(f *testing.F, path string) {
	if b, err := os.ReadFile(path); err == nil {
		f.Add(b)
	}
}

func FuzzReadSeries(f *testing.F) {
	addFile(f, "testdata/twitter-2017-05-25.first120s.csv")
	f.Add([]byte("t_min,count\n0,1\n5,2\n"))
	f.Add([]byte("step,rps\n0,7.5\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		tr, err := ReadSeries(bytes.NewReader(in), "fuzz")
		if err != nil {
			return
		}
		if !tr.IsSeries() || len(tr.Rates) == 0 || len(tr.Rates) > MaxSteps {
			t.Fatalf("accepted series has %d rates", len(tr.Rates))
		}
		n := 0
		for range Seq(Take(tr.Arrivals(1), 1000)) {
			n++
		}
	})
}

func FuzzReadInterarrivals(f *testing.F) {
	addFile(f, "testdata/tw_may25_0-1.head50")
	f.Add([]byte("0.1\n0\n2e-3\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		tr, err := ReadInterarrivals(bytes.NewReader(in), "fuzz")
		if err != nil {
			return
		}
		for i := 1; i < len(tr.Times); i++ {
			if tr.Times[i] < tr.Times[i-1] || tr.Times[i] < 0 {
				t.Fatalf("arrivals out of order at %d", i)
			}
		}
	})
}

func FuzzReadAzureFunctions(f *testing.F) {
	f.Add([]byte("HashOwner,HashApp,HashFunction,Trigger,1,2,3\no,a,f,http,1,0,2\no,a,g,timer,0,0,1\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		tr, err := ReadAzureFunctions(bytes.NewReader(in), "fuzz", nil)
		if err != nil {
			return
		}
		if tr.MeanRate() < 0 {
			t.Fatalf("negative mean rate %v", tr.MeanRate())
		}
	})
}

func FuzzReadMAP2(f *testing.F) {
	f.Add([]byte("-14.625001,0.000000\n0.000000,-35.171226\n"), []byte("0.051020,14.573981\n0.063796,35.107429\n"))
	f.Add([]byte("-1,0\n0,-10\n"), []byte("0,1\n10,0\n"))
	f.Fuzz(func(t *testing.T, d0, d1 []byte) {
		m, err := ReadMAP2(bytes.NewReader(d0), bytes.NewReader(d1))
		if err != nil {
			return
		}
		if r := m.Rate(); !(r >= 0) {
			t.Fatalf("valid MAP with rate %v", r)
		}
		src := m.Arrivals(1)
		var prev int64
		for range 100 {
			at, ok := src.Next()
			if !ok || int64(at) < prev {
				t.Fatalf("MAP arrivals ended or went back: %v %v", at, ok)
			}
			prev = int64(at)
		}
	})
}
