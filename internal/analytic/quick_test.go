package analytic

import (
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
