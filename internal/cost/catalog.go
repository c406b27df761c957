package cost

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// Kind is the class of an instance type.
type Kind string

// The instance kinds (ARCHITECTURE.md, Concepts: InstanceType).
const (
	KindVM         Kind = "vm"
	KindBurstable  Kind = "burstable"
	KindServerless Kind = "serverless"
)

// Delay is a launch (or cold-start) delay distribution: log-normal with the given median and
// shape Sigma, clamped to [Min, Max]. Sigma 0 makes it the constant Median. Launch delays are a
// distribution, not a constant: MArk §3.1 reports "several minutes" for EC2 with large models and
// 7.4 s for a bare p2.xlarge; InferAll's simulator uses 100 s.
type Delay struct {
	// Median is the median delay.
	Median time.Duration `yaml:"median"`
	// Sigma is the standard deviation of the delay's logarithm (dimensionless, ≥ 0).
	Sigma float64 `yaml:"sigma"`
	// Min and Max clamp the sampled delay; zero means no clamp.
	Min time.Duration `yaml:"min"`
	Max time.Duration `yaml:"max"`
}

// Sample draws one delay from d using rng (deterministic for a seeded rng).
func (d Delay) Sample(rng *rand.Rand) time.Duration {
	v := d.Median
	if d.Sigma > 0 && rng != nil {
		v = time.Duration(float64(d.Median) * math.Exp(d.Sigma*rng.NormFloat64()))
	}
	if d.Min > 0 && v < d.Min {
		v = d.Min
	}
	if d.Max > 0 && v > d.Max {
		v = d.Max
	}
	return v
}

func (d Delay) validate(field string) error {
	switch {
	case d.Median < 0:
		return fmt.Errorf("%s.median: must be ≥ 0, got %v", field, d.Median)
	case d.Sigma < 0 || math.IsNaN(d.Sigma) || d.Sigma > 5:
		return fmt.Errorf("%s.sigma: must be in [0, 5], got %v", field, d.Sigma)
	case d.Min < 0 || d.Max < 0:
		return fmt.Errorf("%s: min and max must be ≥ 0, got %v and %v", field, d.Min, d.Max)
	case d.Max > 0 && d.Min > d.Max:
		return fmt.Errorf("%s.min: %v exceeds max %v", field, d.Min, d.Max)
	}
	return nil
}

// Burst describes a burstable type's CPU credits (AWS T2): an instance runs at full speed while
// it has credits and at Baseline of full speed when they are exhausted. One credit is one vCPU
// running at 100 % for one minute.
type Burst struct {
	// Baseline is the sustained fraction of full speed without credits, in (0, 1].
	Baseline float64 `yaml:"baseline"`
	// CreditsPerHour is the rate at which credits accrue (credits per hour).
	CreditsPerHour float64 `yaml:"credits_per_hour"`
	// InitialCredits is the balance at launch (credits).
	InitialCredits float64 `yaml:"initial_credits"`
	// MaxCredits caps the balance (credits); 0 means 24 hours of accrual, as on AWS.
	MaxCredits float64 `yaml:"max_credits,omitempty"`
}

// InstanceType is one VM or burstable catalog entry.
type InstanceType struct {
	// Name is the catalog name, e.g. "c5.large".
	Name string `yaml:"name"`
	// Kind is vm or burstable.
	Kind Kind `yaml:"kind"`
	// VCPU is the number of virtual CPUs.
	VCPU int `yaml:"vcpu"`
	// MemoryGB is the memory in GiB.
	MemoryGB float64 `yaml:"memory_gb"`
	// GPUs is the number of GPUs (0 for CPU-only types).
	GPUs int `yaml:"gpus,omitempty"`
	// PricePerHour is the on-demand price in US dollars per hour.
	PricePerHour float64 `yaml:"price_per_hour"`
	// SpotPricePerHour is the spot price in US dollars per hour when no price series is given;
	// 0 means the type is not offered on the spot market.
	SpotPricePerHour float64 `yaml:"spot_price_per_hour"`
	// LaunchDelay is the time from launch request to readiness (model loaded).
	LaunchDelay Delay `yaml:"launch_delay"`
	// BillingMinimum and BillingGranularity override the catalog's billing rule; 0 = inherit.
	BillingMinimum     time.Duration `yaml:"billing_minimum,omitempty"`
	BillingGranularity time.Duration `yaml:"billing_granularity,omitempty"`
	// Burst holds the CPU-credit model of a burstable type; nil for other kinds.
	Burst *Burst `yaml:"burst,omitempty"`
}

// Billing is a per-use billing rule: usage is rounded up to Granularity and charged at least Minimum.
type Billing struct {
	// Minimum is the least duration charged per instance (EC2: 60 s).
	Minimum time.Duration `yaml:"minimum"`
	// Granularity is the billing unit (EC2: 1 s).
	Granularity time.Duration `yaml:"granularity"`
}

// Serverless describes the serverless tier (AWS Lambda-like).
type Serverless struct {
	// Name is the tier's catalog name, e.g. "lambda".
	Name string `yaml:"name"`
	// MinMemoryMB and MaxMemoryMB bound the configurable memory, in MB (Lambda: 128–10,240).
	MinMemoryMB int `yaml:"min_memory_mb"`
	MaxMemoryMB int `yaml:"max_memory_mb"`
	// FullVCPUMemoryMB is the memory at which a function gets one full vCPU; CPU share is
	// proportional to memory (Lambda: 1,769 MB).
	FullVCPUMemoryMB int `yaml:"full_vcpu_memory_mb"`
	// PricePerGBSecond is the price of one GB-second of execution in US dollars (BATCH Eq. 1).
	PricePerGBSecond float64 `yaml:"price_per_gb_second"`
	// PricePerInvocation is the price of one call in US dollars (BATCH Eq. 1).
	PricePerInvocation float64 `yaml:"price_per_invocation"`
	// Granularity is the unit execution time is rounded up to (Lambda today: 1 ms; BATCH: 100 ms).
	Granularity time.Duration `yaml:"granularity"`
	// ColdStart is the extra delay of the first call on a new function instance.
	ColdStart Delay `yaml:"cold_start"`
	// KeepAlive is how long an idle function instance stays warm.
	KeepAlive time.Duration `yaml:"keep_alive"`
	// Concurrency is the most function instances that may run at once (Lambda account default: 1,000).
	Concurrency int `yaml:"concurrency"`
}

// Spot holds the spot market's interruption behaviour.
type Spot struct {
	// InterruptionsPerHour is the rate at which each running spot instance is interrupted (per hour).
	InterruptionsPerHour float64 `yaml:"interruptions_per_hour"`
	// Notice is the warning given before an interrupted instance is reclaimed (EC2: 2 min).
	Notice time.Duration `yaml:"notice"`
}

// Catalog is the set of instance types a provider offers, with billing rules.
type Catalog struct {
	// Billing is the default billing rule for VM and burstable types.
	Billing Billing `yaml:"billing"`
	// Types lists the VM and burstable types.
	Types []InstanceType `yaml:"types"`
	// Serverless is the serverless tier.
	Serverless Serverless `yaml:"serverless"`
	// Spot is the spot market's behaviour.
	Spot Spot `yaml:"spot"`
}

// Lambda pricing of BATCH Eq. 1 (and AWS list prices): dollars per GB-second and per call.
const (
	LambdaPricePerGBSecond   = 1.66667e-5
	LambdaPricePerInvocation = 2e-7
)

// EC2 billing defaults: per second with a 60-second minimum.
const (
	EC2BillingMinimum     = 60 * time.Second
	EC2BillingGranularity = time.Second
)

// SpotNotice is EC2's interruption notice (MArk §4.5).
const SpotNotice = 2 * time.Minute

// Type returns the VM or burstable type with the given name.
func (c *Catalog) Type(name string) (InstanceType, bool) {
	for _, t := range c.Types {
		if t.Name == name {
			return t, true
		}
	}
	return InstanceType{}, false
}

// BillingFor returns the billing rule that applies to t.
func (c *Catalog) BillingFor(t InstanceType) Billing {
	b := c.Billing
	if t.BillingMinimum > 0 {
		b.Minimum = t.BillingMinimum
	}
	if t.BillingGranularity > 0 {
		b.Granularity = t.BillingGranularity
	}
	return b
}

// Validate reports the first field that is out of range, naming it and the bad value.
func (c *Catalog) Validate() error {
	if c.Billing.Minimum < 0 || c.Billing.Granularity < 0 {
		return fmt.Errorf("billing: minimum and granularity must be ≥ 0, got %v and %v", c.Billing.Minimum, c.Billing.Granularity)
	}
	seen := map[string]bool{}
	for i, t := range c.Types {
		f := fmt.Sprintf("types[%d]", i)
		switch {
		case t.Name == "":
			return fmt.Errorf("%s.name: must not be empty", f)
		case seen[t.Name]:
			return fmt.Errorf("%s.name: %q appears twice", f, t.Name)
		case t.Kind != KindVM && t.Kind != KindBurstable:
			return fmt.Errorf("%s.kind: must be vm or burstable, got %q", f, t.Kind)
		case t.VCPU <= 0:
			return fmt.Errorf("%s.vcpu: must be > 0, got %d", f, t.VCPU)
		case !(t.MemoryGB > 0) || math.IsInf(t.MemoryGB, 0):
			return fmt.Errorf("%s.memory_gb: must be > 0, got %v", f, t.MemoryGB)
		case t.GPUs < 0:
			return fmt.Errorf("%s.gpus: must be ≥ 0, got %d", f, t.GPUs)
		case !(t.PricePerHour >= 0) || math.IsInf(t.PricePerHour, 0):
			return fmt.Errorf("%s.price_per_hour: must be ≥ 0, got %v", f, t.PricePerHour)
		case !(t.SpotPricePerHour >= 0) || math.IsInf(t.SpotPricePerHour, 0):
			return fmt.Errorf("%s.spot_price_per_hour: must be ≥ 0, got %v", f, t.SpotPricePerHour)
		case t.BillingMinimum < 0 || t.BillingGranularity < 0:
			return fmt.Errorf("%s: billing_minimum and billing_granularity must be ≥ 0", f)
		case t.Kind == KindBurstable && t.Burst == nil:
			return fmt.Errorf("%s.burst: required for kind burstable", f)
		}
		seen[t.Name] = true
		if err := t.LaunchDelay.validate(f + ".launch_delay"); err != nil {
			return err
		}
		if b := t.Burst; b != nil {
			switch {
			case !(b.Baseline > 0 && b.Baseline <= 1):
				return fmt.Errorf("%s.burst.baseline: must be in (0, 1], got %v", f, b.Baseline)
			case !(b.CreditsPerHour >= 0) || math.IsInf(b.CreditsPerHour, 0):
				return fmt.Errorf("%s.burst.credits_per_hour: must be ≥ 0, got %v", f, b.CreditsPerHour)
			case !(b.InitialCredits >= 0) || math.IsInf(b.InitialCredits, 0):
				return fmt.Errorf("%s.burst.initial_credits: must be ≥ 0, got %v", f, b.InitialCredits)
			case !(b.MaxCredits >= 0) || math.IsInf(b.MaxCredits, 0):
				return fmt.Errorf("%s.burst.max_credits: must be ≥ 0, got %v", f, b.MaxCredits)
			}
		}
	}
	s := c.Serverless
	switch {
	case s.MinMemoryMB <= 0:
		return fmt.Errorf("serverless.min_memory_mb: must be > 0, got %d", s.MinMemoryMB)
	case s.MaxMemoryMB < s.MinMemoryMB:
		return fmt.Errorf("serverless.max_memory_mb: must be ≥ min_memory_mb %d, got %d", s.MinMemoryMB, s.MaxMemoryMB)
	case s.FullVCPUMemoryMB <= 0:
		return fmt.Errorf("serverless.full_vcpu_memory_mb: must be > 0, got %d", s.FullVCPUMemoryMB)
	case !(s.PricePerGBSecond >= 0) || math.IsInf(s.PricePerGBSecond, 0):
		return fmt.Errorf("serverless.price_per_gb_second: must be ≥ 0, got %v", s.PricePerGBSecond)
	case !(s.PricePerInvocation >= 0) || math.IsInf(s.PricePerInvocation, 0):
		return fmt.Errorf("serverless.price_per_invocation: must be ≥ 0, got %v", s.PricePerInvocation)
	case s.Granularity < 0:
		return fmt.Errorf("serverless.granularity: must be ≥ 0, got %v", s.Granularity)
	case s.KeepAlive < 0:
		return fmt.Errorf("serverless.keep_alive: must be ≥ 0, got %v", s.KeepAlive)
	case s.Concurrency <= 0:
		return fmt.Errorf("serverless.concurrency: must be > 0, got %d", s.Concurrency)
	}
	if err := s.ColdStart.validate("serverless.cold_start"); err != nil {
		return err
	}
	switch sp := c.Spot; {
	case !(sp.InterruptionsPerHour >= 0) || math.IsInf(sp.InterruptionsPerHour, 0):
		return fmt.Errorf("spot.interruptions_per_hour: must be ≥ 0, got %v", sp.InterruptionsPerHour)
	case sp.Notice < 0:
		return fmt.Errorf("spot.notice: must be ≥ 0, got %v", sp.Notice)
	}
	return nil
}

// SpotSuffix marks a spot instance in a type name: "c5.large/spot" is a c5.large bought on the
// spot market (provider.Spec has no market field, so the market travels in the type name).
const SpotSuffix = "/spot"

// ParseType splits a type name into the catalog name and whether it asks for the spot market.
func ParseType(name string) (base string, spot bool) {
	if b, ok := strings.CutSuffix(name, SpotSuffix); ok {
		return b, true
	}
	return name, false
}
