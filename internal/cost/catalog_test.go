package cost

import (
	"bytes"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestExampleCatalogIsDefault(t *testing.T) {
	f, err := os.Open("../../examples/catalog.yaml")
	if err != nil {
		t.Fatalf("open example: %v", err)
	}
	defer f.Close()
	got, err := Load(f)
	if err != nil {
		t.Fatalf("Load(examples/catalog.yaml): %v", err)
	}
	if want := DefaultCatalog(); !reflect.DeepEqual(want, got) {
		t.Errorf("examples/catalog.yaml differs from DefaultCatalog():\nwant %+v\ngot  %+v", want, got)
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	if err := Marshal(&buf, DefaultCatalog()); err != nil {
		t.Fatal(err)
	}
	got, err := Load(&buf)
	if err != nil {
		t.Fatalf("Load(Marshal(default)): %v", err)
	}
	if want := DefaultCatalog(); !reflect.DeepEqual(want, got) {
		t.Errorf("round trip (-want +got):\n-%+v\n+%+v", want, got)
	}
}

func TestLoadErrors(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"unknown field", "bogus: 1", "field bogus not found"},
		{"negative price", "types: [{name: a, kind: vm, vcpu: 1, memory_gb: 1, price_per_hour: -1}]", "types[0].price_per_hour"},
		{"bad kind", "types: [{name: a, kind: tpu, vcpu: 1, memory_gb: 1}]", "types[0].kind"},
		{"duplicate", "types: [{name: a, kind: vm, vcpu: 1, memory_gb: 1}, {name: a, kind: vm, vcpu: 1, memory_gb: 1}]", "appears twice"},
		{"burstable without burst", "types: [{name: a, kind: burstable, vcpu: 1, memory_gb: 1}]", "types[0].burst"},
		{"memory range", "serverless: {min_memory_mb: 512, max_memory_mb: 256}", "serverless.max_memory_mb"},
		{"bad duration", "billing: {minimum: soon}", "parse catalog"},
		{"sigma", "serverless: {cold_start: {median: 1s, sigma: -1}}", "serverless.cold_start.sigma"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(strings.NewReader(c.yaml))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Load(%q) error = %v, want it to mention %q", c.yaml, err, c.want)
			}
		})
	}
}

func TestLoadPartialKeepsDefaults(t *testing.T) {
	c, err := Load(strings.NewReader("serverless: {keep_alive: 5m}"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Serverless.KeepAlive != 5*time.Minute || c.Serverless.PricePerGBSecond != LambdaPricePerGBSecond || len(c.Types) != len(DefaultCatalog().Types) {
		t.Errorf("partial catalog = %+v, want defaults except keep_alive 5m", c.Serverless)
	}
}

func TestBilling(t *testing.T) {
	ec2 := Billing{Minimum: time.Minute, Granularity: time.Second}
	cases := []struct {
		name string
		b    Billing
		used time.Duration
		want time.Duration
	}{
		{"below minimum", ec2, 10 * time.Second, time.Minute},
		{"rounds up", ec2, 61*time.Second + time.Millisecond, 62 * time.Second},
		{"exact", ec2, 2 * time.Minute, 2 * time.Minute},
		{"negative", ec2, -time.Second, time.Minute},
		{"100ms lambda", Billing{Granularity: 100 * time.Millisecond}, 101 * time.Millisecond, 200 * time.Millisecond},
		{"no rule", Billing{}, 1234, 1234},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.b.Billable(c.used); got != c.want {
				t.Errorf("Billable(%v) (-want +got): -%v +%v", c.used, c.want, got)
			}
		})
	}
	if got, want := VMCost(ec2, 0.085, time.Hour), 0.085; !near(got, want) {
		t.Errorf("VMCost(1h c5.large) = %v, want %v", got, want)
	}
	s := DefaultCatalog().Serverless
	// BATCH Eq. 1: 3008 MB for 1 s = 2.9375 GB-s.
	if got, want := s.InvocationCost(3008, time.Second), 2.9375*LambdaPricePerGBSecond+LambdaPricePerInvocation; !near(got, want) {
		t.Errorf("InvocationCost(3008 MB, 1 s) = %v, want %v", got, want)
	}
}

func near(a, b float64) bool { d := a - b; return d < 1e-12 && d > -1e-12 }

func TestDelaySample(t *testing.T) {
	d := Delay{Median: 100 * time.Second, Sigma: 0.3, Min: 40 * time.Second, Max: 300 * time.Second}
	rng := rand.New(rand.NewPCG(1, 2))
	var below int
	for range 10000 {
		v := d.Sample(rng)
		if v < d.Min || v > d.Max {
			t.Fatalf("Sample = %v outside [%v, %v]", v, d.Min, d.Max)
		}
		if v < d.Median {
			below++
		}
	}
	if below < 4700 || below > 5300 {
		t.Errorf("fraction below median = %v, want about 0.5", float64(below)/10000)
	}
	if got := (Delay{Median: time.Second}).Sample(rng); got != time.Second {
		t.Errorf("constant delay sampled %v, want 1s", got)
	}
}

func FuzzLoad(f *testing.F) {
	if b, err := os.ReadFile("../../examples/catalog.yaml"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("types: [{name: a, kind: vm, vcpu: 1, memory_gb: 1}]"))
	f.Add([]byte("billing: {minimum: 1s}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Load(bytes.NewReader(b))
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Load returned an invalid catalog: %v", err)
		}
	})
}

// TestSageMakerTypes checks that every SageMaker-hosted default type mirrors its EC2 type (same
// machine, no spot market) at SageMaker's 1.4× hosting premium, and the name helpers.
func TestSageMakerTypes(t *testing.T) {
	c := DefaultCatalog()
	n := 0
	for _, it := range c.Types {
		base := HostedOn(it.Name)
		if base == it.Name {
			continue
		}
		n++
		t.Run(it.Name, func(t *testing.T) {
			ec2, ok := c.Type(base)
			if !ok {
				t.Fatalf("HostedOn(%q) = %q, not in the catalog", it.Name, base)
			}
			if got := SageMakerType(base); got != it.Name {
				t.Errorf("SageMakerType(%q) = %q, want %q", base, got, it.Name)
			}
			if r := it.PricePerHour / ec2.PricePerHour; r < 1.39 || r > 1.41 {
				t.Errorf("price %v / EC2 %v = %.3f, want SageMaker's 1.4× premium", it.PricePerHour, ec2.PricePerHour, r)
			}
			if it.SpotPricePerHour != 0 {
				t.Errorf("spot price %v, want 0 (SageMaker hosting has no spot market)", it.SpotPricePerHour)
			}
			if it.VCPU != ec2.VCPU || it.MemoryGB != ec2.MemoryGB || it.GPUs != ec2.GPUs || it.LaunchDelay != ec2.LaunchDelay {
				t.Errorf("machine differs from %s (-want +got):\n-%+v\n+%+v", base, ec2, it)
			}
		})
	}
	if n != 9 {
		t.Errorf("%d SageMaker types, want 9 (c5 and m5 sizes, p2.xlarge)", n)
	}
	for name, want := range map[string]string{"ml.c5.large": "c5.large", "c5.large": "c5.large", "ml.": "ml.", "c5.large/spot": "c5.large/spot"} {
		if got := HostedOn(name); got != want {
			t.Errorf("HostedOn(%q) = %q, want %q", name, got, want)
		}
	}
}
