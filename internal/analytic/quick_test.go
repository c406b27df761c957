package analytic

import (
	"time"
	"fmt"
	"math"
	"os"
	"math/rand/v2"
	"testing"
)

func TestQuick(t *testing.T) {
	cases := []struct {
		name string
		a    func() (*MAP, error)
	}{
		{"poisson", func() (*MAP, error) { return Poisson(20) }},
		{"mmpp", func() (*MAP, error) { return MMPP2(5, 60, 0.5, 1) }},
		{"twitter1", func() (*MAP, error) {
			return NewMAP([][]float64{{-14.625001, 0}, {0, -35.171226}}, [][]float64{{0.051020, 14.573981}, {0.063796, 35.107429}})
		}},
	}
	for _, c := range cases {
		a, err := c.a()
		if err != nil {
			t.Fatal(err)
		}
		for _, B := range []int{1, 5, 20} {
			for _, T := range []float64{0.01, 0.1, 0.5} {
				bt, err := Analyze(a, B, T, StartExact)
				if err != nil {
					t.Fatal(err)
				}
				svc := make([]float64, B)
				for k := range svc {
					svc[k] = 0.034*float64(k+1) + 0.01
				}
				s := NewSampler(a, rand.New(rand.NewPCG(1, 2)))
				ia := make([]float64, 200000)
				for i := range ia {
					ia[i] = s.Next()
				}
				lat, _ := SimulateBuffer(ia, B, T, svc)
				d := Kolmogorov(lat, func(x float64) float64 { return bt.LatencyCDF(svc, x) })
				dp := Kolmogorov(lat, func(x float64) float64 { return bt.PaperLatencyCDF(svc, x) })
				q, _ := bt.Quantile(svc, 0.95)
				t.Logf("%s B=%d T=%g EK=%.3f D=%.4f Dpaper=%.4f p95 model %.4f sim %.4f", c.name, B, T, bt.MeanBatchSize(), d, dp, q, EmpiricalQuantile(lat, 0.95))
			}
		}
	}
}

func TestQuickFit(t *testing.T) {
	for _, h := range []string{"0-1", "7-8", "14-15", "20-21"} {
		f, err := os.Open("../../../shared/data/traces/twitter-2017-05-25-interarrivals/TW_may25_" + h)
		if err != nil {
			t.Skip(err)
		}
		x, err := ReadInterarrivals(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		a, st, err := FitMAP2(x)
		if err != nil {
			t.Fatal(err)
		}
		mean, scv, skew, rho := a.Moments()
		t.Logf("%s stats %+v fit rate %.3f mean %.5f scv %.3f skew %.3f rho %.4f", h, st, a.Rate(), mean, scv, skew, rho)
		for w := 1; w <= 24; w++ {
			d0, _ := os.Open(fmt.Sprintf("../../../shared/data/traces/batch-map-fits/twitter/MAP%d_D0", w))
			d1, _ := os.Open(fmt.Sprintf("../../../shared/data/traces/batch-map-fits/twitter/MAP%d_D1", w))
			b, err := ReadMAP(d0, d1)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(b.Rate()/a.Rate()-1) < 0.05 {
				m, s, k, r := b.Moments()
				t.Logf("   matches MAP%d rate %.3f (%.5f %.3f %.3f %.4f)", w, b.Rate(), m, s, k, r)
			}
		}
	}
}

func TestQuickPoly(t *testing.T) {
	t.Logf("%.3f %.3f", TFResnetV2.ServiceTime(1, 3008), TFResnetV2.ServiceTime(20, 3008))
}

func TestQuickOpt(t *testing.T) {
	a, _ := Poisson(35)
	for _, slo := range []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second} {
		st := time.Now()
		pl, err := Optimize(Problem{Arrivals: a, Service: TFResnetV2, Percentile: 0.95, SLO: slo})
		t.Logf("%v %v %+v %v", slo, time.Since(st), pl, err)
	}
}
