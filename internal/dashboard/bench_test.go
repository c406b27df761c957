package dashboard

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkData measures one /ui/data response over a full default ring (600 samples of the
// two synthetic models), the work every open page causes once per refresh.
func BenchmarkData(b *testing.B) {
	d, err := New(NewSynthetic(1), Options{})
	if err != nil {
		b.Fatal(err)
	}
	for i := range d.Options().Capacity {
		if err := d.Step(b.Context(), t0.Add(time.Duration(i)*time.Second)); err != nil {
			b.Fatal(err)
		}
	}
	req := httptest.NewRequest(http.MethodGet, "/ui/data", nil)
	var size int
	for b.Loop() {
		rec := httptest.NewRecorder()
		d.ServeHTTP(rec, req)
		size = rec.Body.Len()
	}
	b.ReportMetric(float64(size), "bytes/response")
}

// BenchmarkStep measures one sample of the synthetic Source into a full ring.
func BenchmarkStep(b *testing.B) {
	d, err := New(NewSynthetic(1), Options{Capacity: 600})
	if err != nil {
		b.Fatal(err)
	}
	now := t0
	for b.Loop() {
		now = now.Add(time.Second)
		_ = d.Step(b.Context(), now)
	}
}
