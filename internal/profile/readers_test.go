package profile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const sharedProfiles = "../../../shared/data/profiles"

func openShared(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join(sharedProfiles, name))
	if err != nil {
		t.Skipf("shared data absent (%v); the suite runs without it", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestReadINFless(t *testing.T) {
	in := "ssd 2 10 1 140.43 \nssd 2 10 2 189.57\nssd 2 10 8 9999\nssd 2 0 1 12000\n"
	p, err := ReadINFless(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.Curve(2, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.MaxMeasured(), 2; got != want {
		t.Errorf("MaxMeasured (-want +got): -%d +%d (9999 must be dropped)", want, got)
	}
	if _, err := p.Curve(2, 0); err == nil {
		t.Errorf("Curve(2, 0) = nil error, want infeasible (12000 ms is a timeout)")
	}
	for _, bad := range []string{"", "ssd 1 2 3\n", "ssd a 1 1 1\n", "ssd 1 1 0 3\n", "ssd 1 1 1 1\nresnet 1 1 1 1\n"} {
		if _, err := ReadINFless(strings.NewReader(bad)); err == nil {
			t.Errorf("ReadINFless(%q) succeeded, want an error", bad)
		}
	}
}

func TestReadINFlessShared(t *testing.T) {
	p, err := ReadINFless(openShared(t, "infless/resnet-50-profile-results.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Curve(2, 10); err != nil {
		t.Error(err)
	}
}

func TestBatchPolynomials(t *testing.T) {
	ps, err := ReadBatchPolynomials(openShared(t, "batch-lambda-polynomials.json"))
	if err != nil {
		t.Fatal(err)
	}
	p := ps["TF-resnetV2"]
	c, err := p.At(3008)
	if err != nil {
		t.Fatal(err)
	}
	// data/README.md: TF-resnetV2 takes 1.53 s at batch 1 and 12.4 s at batch 20 with 3008 MB.
	for _, x := range []struct {
		b    int
		want float64
	}{{1, 1.53}, {20, 12.4}} {
		got := c.ServiceTime(x.b).Seconds()
		if got < x.want*0.97 || got > x.want*1.03 {
			t.Errorf("f(%d, 3008) = %.3f s, want ≈ %.2f s", x.b, got, x.want)
		}
	}
	if _, err := p.At(512); err == nil {
		t.Errorf("At(512) = nil error, want outside-domain error")
	}
	if len(ps["mxnet-resnet50"].Coef) != 15 {
		t.Errorf("mxnet-resnet50 has %d coefficients, want 15", len(ps["mxnet-resnet50"].Coef))
	}
}

func TestReadMLProxy(t *testing.T) {
	rows, err := ReadMLProxy(openShared(t, "batch_profile_keras_toxic_comments_cpu1000m.csv"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := MLProxyCurve(rows, "bentoml-keras-toxic-comments", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.ServiceTime(1); got < 40*time.Millisecond || got > 41*time.Millisecond {
		t.Errorf("ServiceTime(1) = %v, want 40.38 ms (Table 2 BRT 40 ms)", got)
	}
	if got := c.ServiceTime(10); got < 46*time.Millisecond || got > 47*time.Millisecond {
		t.Errorf("ServiceTime(10) = %v, want 46.34 ms", got)
	}
}

func TestReadInferAll(t *testing.T) {
	ia, err := ReadInferAll(openShared(t, "inferall-lambda-vm-latency.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := ia.Model("inception")
	if err != nil {
		t.Fatal(err)
	}
	b := m.VM["c5.large"]
	if got, want := b.Curve.ServiceTime(1), 35*time.Millisecond; got != want || b.Slots != 9 {
		t.Errorf("inception on c5.large batch 1 = %v slots %d, want %v slots 9", got, b.Slots, want)
	}
	c, err := m.Serverless.At(3008)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.ServiceTime(1), 144*time.Millisecond; got != want {
		t.Errorf("inception on Lambda 3008 MB (-want +got): -%v +%v", want, got)
	}
	c, _ = m.Serverless.At(1504)
	if got, want := c.ServiceTime(1), 380*time.Millisecond*1024/1504; got < want-time.Millisecond || got > want+time.Millisecond {
		t.Errorf("scaled 1504 MB = %v, want ≈ %v", got, want)
	}
}

func TestReadMArk(t *testing.T) {
	caps, err := ReadMArk(openShared(t, "mark-constants.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range caps["tf"] {
		if c.Type == "p2.xlarge" {
			if c.HandleSize != 8 || c.PerMinute != 3320 {
				t.Errorf("tf p2.xlarge = %+v, want handle 8, 3320 r/min", c)
			}
			if got, want := c.Curve().ServiceTime(8), durationOf(8*60e9/3320); got != want {
				t.Errorf("curve(8) = %v, want %v", got, want)
			}
		}
	}
}

func TestReadWorkerProfile(t *testing.T) {
	f, err := os.Open("testdata/worker.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := ReadWorkerProfile(f)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := p.Backend()
	if got, want := b.Curve.ServiceTime(32), 140*time.Microsecond; got != want {
		t.Errorf("ServiceTime(32) from p50 (-want +got): -%v +%v", want, got)
	}
	for _, bad := range []string{`{}`, `{"model":"m"}`, `{"model":"m","points":[{"batch":0,"mean_ms":1}]}`, `{"model":"m","points":[{"batch":1}]}`,
		`{"model":"m","points":[{"batch":1,"mean_ms":1},{"batch":1,"mean_ms":2}]}`} {
		if _, err := ReadWorkerProfile(strings.NewReader(bad)); err == nil {
			t.Errorf("ReadWorkerProfile(%s) succeeded, want an error", bad)
		}
	}
}

func FuzzReadINFless(f *testing.F) {
	f.Add("ssd 2 10 1 140.43\nssd 2 10 2 9999\n")
	f.Fuzz(func(t *testing.T, in string) {
		p, err := ReadINFless(strings.NewReader(in))
		if err != nil {
			return
		}
		for _, x := range p.Points {
			if c, err := p.Curve(x.CPU, x.GPU); err == nil {
				_ = c.ServiceTime(x.Batch)
			}
		}
	})
}

func FuzzReadBatchPolynomials(f *testing.F) {
	f.Add([]byte(`{"batch_service_time_polynomial":{"coefficients":{"m":{"t0":1,"t1":0.1}}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ps, err := ReadBatchPolynomials(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, p := range ps {
			_, _ = p.At(2048)
		}
	})
}

func FuzzReadMLProxy(f *testing.F) {
	f.Add("service_name,cpu_m,batch_size,resp_time_avg,resp_time_p50,resp_time_p95,resp_time_p99\ns,1000,1,40,39,45,50\n")
	f.Fuzz(func(t *testing.T, in string) {
		rows, err := ReadMLProxy(strings.NewReader(in))
		if err != nil {
			return
		}
		_, _ = MLProxyCurve(rows, rows[0].Service, 0)
	})
}

func FuzzReadInferAll(f *testing.F) {
	f.Add([]byte(`{"batch_sz":[1,2],"lambda_models":["a"],"vm_models":["a"],"vm_available_memory_MB":[4096],"lambda_available_memory_MB":[1024],"lambda_latency_ms":[[[10,null]]],"vm_latency_ms":[[[5,6]]]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ia, err := ReadInferAll(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, m := range ia.VMModels {
			if mm, err := ia.Model(m); err == nil && mm.Serverless != nil {
				_, _ = mm.Serverless.At(2000)
			}
		}
	})
}

func FuzzReadMArk(f *testing.F) {
	f.Add([]byte(`{"batching":{"HANDLE_SIZE_P2":8},"instances":{"tf":{"types":["p2.xlarge"],"capacity_r_per_min":[3320]}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		caps, err := ReadMArk(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, cs := range caps {
			for _, c := range cs {
				_ = c.Curve().ServiceTime(3)
			}
		}
	})
}

func FuzzReadWorkerProfile(f *testing.F) {
	if b, err := os.ReadFile("testdata/worker.json"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ReadWorkerProfile(bytes.NewReader(b))
		if err != nil {
			return
		}
		if _, err := p.Backend(); err != nil {
			t.Fatalf("accepted profile has no backend: %v", err)
		}
	})
}
