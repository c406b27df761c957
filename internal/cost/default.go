package cost

import (
	"strings"
	"time"
)

// Default launch-delay parameters. InferAll's simulator (config.py start_up_delay_ms) and MArk §3.1
// ("several minutes" to load a large model on EC2) put a VM's time to readiness around 100 s; the
// log-normal spread (σ = 0.3) and the clamps are our choice, to make launch delays a distribution.
var (
	// DefaultVMLaunchDelay is the launch delay of CPU VM and burstable types.
	DefaultVMLaunchDelay = Delay{Median: 100 * time.Second, Sigma: 0.3, Min: 40 * time.Second, Max: 300 * time.Second}
	// DefaultGPULaunchDelay is the launch delay of GPU types (larger images, driver start).
	DefaultGPULaunchDelay = Delay{Median: 120 * time.Second, Sigma: 0.3, Min: 60 * time.Second, Max: 360 * time.Second}
	// DefaultContainerStart is a container's time to readiness (image cached, model loaded).
	DefaultContainerStart = Delay{Median: 5 * time.Second, Sigma: 0.4, Min: 2 * time.Second, Max: 30 * time.Second}
	// DefaultColdStart is a serverless cold start with a model load (MArk §4.5: seconds).
	DefaultColdStart = Delay{Median: 1500 * time.Millisecond, Sigma: 0.5, Min: 300 * time.Millisecond, Max: 10 * time.Second}
)

// Serverless tier defaults (AWS Lambda).
const (
	// LambdaMinMemoryMB and LambdaMaxMemoryMB bound Lambda's memory setting.
	LambdaMinMemoryMB = 128
	LambdaMaxMemoryMB = 10240
	// LambdaFullVCPUMemoryMB is the memory that buys one full vCPU.
	LambdaFullVCPUMemoryMB = 1769
	// LambdaGranularity is Lambda's billing unit since December 2020.
	LambdaGranularity = time.Millisecond
	// LambdaKeepAlive is how long an idle Lambda instance stays warm; MArk §4.5 cites 45–60 min
	// measurements, newer measurements find 5–15 min; we take 15 min.
	LambdaKeepAlive = 15 * time.Minute
	// LambdaConcurrency is the default account concurrency limit.
	LambdaConcurrency = 1000
)

// DefaultSpotInterruptionsPerHour is the default interruption rate of a spot instance: about one
// interruption per day, AWS's "< 5 %" frequency band for the c5 family.
const DefaultSpotInterruptionsPerHour = 1.0 / 24

// SageMakerPrefix starts the name of a SageMaker-hosted instance type: "ml.c5.large" is a
// c5.large that SageMaker hosting runs (and bills at its own price) for an endpoint.
const SageMakerPrefix = "ml."

// SageMakerType returns the SageMaker hosting type that runs the EC2 type ec2 ("c5.large" →
// "ml.c5.large").
func SageMakerType(ec2 string) string { return SageMakerPrefix + ec2 }

// HostedOn returns the EC2 type a managed-hosting type runs on ("ml.c5.large" → "c5.large"),
// and name itself for every other type. The hosted type has the EC2 type's performance (its
// model profile) and its own price.
func HostedOn(name string) string {
	if b, ok := strings.CutPrefix(name, SageMakerPrefix); ok && b != "" {
		return b
	}
	return name
}

// DefaultCatalog returns the catalog of MArk §3 and §5.1 (c5 and m5 sizes, p2.xlarge) and
// Cocktail App. D (spot c5 sizes), plus t2 burstables, at AWS us-east-1 on-demand Linux prices
// of the papers' time. Spot prices are the first values of Cocktail's spot.csv for c5 and about
// 30 % of on-demand elsewhere. Billing is per second with a 60 s minimum.
//
// It also holds the SageMaker-hosted variants of the same types ("ml.c5.large", …), which the
// sagemaker baseline policy bills by default. MArk §5.1 compares against SageMaker hosting and
// §5.2 reports "the charge billed by AWS" in us-east-1 (footnote 2) without listing prices;
// SageMaker bills an endpoint's instances at its ML-instance hosting prices, which are EC2's
// times 1.4 for these types: us-east-1 real-time inference on-demand prices (AWS SageMaker
// pricing page, aws.amazon.com/sagemaker/pricing, as listed ca. 2019–2021) ml.c5.xlarge $0.238,
// ml.c5.2xlarge $0.476, ml.c5.4xlarge $0.952, ml.m5.large $0.134, ml.m5.xlarge $0.269,
// ml.m5.2xlarge $0.538, ml.m5.4xlarge $1.075, ml.p2.xlarge $1.26 (cross-checked against a
// public SageMaker endpoint price table); ml.c5.large $0.119 is c5.large's $0.085 × 1.4, the
// same premium. SageMaker hosting has no spot market. The paper gives no SageMaker prices, so
// these are our sourcing, not MArk's figures.
func DefaultCatalog() Catalog {
	vm := func(name string, vcpu int, mem float64, price, spot float64) InstanceType {
		return InstanceType{Name: name, Kind: KindVM, VCPU: vcpu, MemoryGB: mem, PricePerHour: price,
			SpotPricePerHour: spot, LaunchDelay: DefaultVMLaunchDelay}
	}
	t2 := func(name string, vcpu int, mem, price, baseline, perHour, initial float64) InstanceType {
		return InstanceType{Name: name, Kind: KindBurstable, VCPU: vcpu, MemoryGB: mem, PricePerHour: price,
			LaunchDelay: DefaultVMLaunchDelay,
			Burst:       &Burst{Baseline: baseline, CreditsPerHour: perHour, InitialCredits: initial}}
	}
	// container.1cpu is a 1 vCPU / 1 GB container (a Knative pod, MLProxy §3: cpu 1000m, 1 GB),
	// priced like AWS Fargate ($0.04048 per vCPU-hour + $0.004445 per GB-hour); pods start in
	// seconds, not minutes.
	ctr := vm("container.1cpu", 1, 1, 0.044925, 0)
	ctr.LaunchDelay = DefaultContainerStart
	p2 := vm("p2.xlarge", 4, 61, 0.90, 0.27)
	p2.GPUs = 1
	p2.LaunchDelay = DefaultGPULaunchDelay
	mlp2 := vm(SageMakerType("p2.xlarge"), 4, 61, 1.26, 0)
	mlp2.GPUs = 1
	mlp2.LaunchDelay = DefaultGPULaunchDelay
	return Catalog{
		Billing: Billing{Minimum: EC2BillingMinimum, Granularity: EC2BillingGranularity},
		Types: []InstanceType{
			vm("c5.large", 2, 4, 0.085, 0.045),
			vm("c5.xlarge", 4, 8, 0.17, 0.06),
			vm("c5.2xlarge", 8, 16, 0.34, 0.08),
			vm("c5.4xlarge", 16, 32, 0.68, 0.17),
			vm("m5.large", 2, 8, 0.096, 0.03),
			vm("m5.xlarge", 4, 16, 0.192, 0.06),
			vm("m5.2xlarge", 8, 32, 0.384, 0.12),
			vm("m5.4xlarge", 16, 64, 0.768, 0.24),
			p2,
			// AWS T2: baseline per instance = baseline per vCPU × vCPUs; launch credits 30 per vCPU.
			t2("t2.medium", 2, 4, 0.0464, 0.20, 24, 60),
			t2("t2.large", 2, 8, 0.0928, 0.30, 36, 60),
			t2("t2.xlarge", 4, 16, 0.1856, 0.225, 54, 120),
			ctr,
			// SageMaker hosting (us-east-1 ML-instance prices, see above): the sagemaker baseline's.
			vm(SageMakerType("c5.large"), 2, 4, 0.119, 0),
			vm(SageMakerType("c5.xlarge"), 4, 8, 0.238, 0),
			vm(SageMakerType("c5.2xlarge"), 8, 16, 0.476, 0),
			vm(SageMakerType("c5.4xlarge"), 16, 32, 0.952, 0),
			vm(SageMakerType("m5.large"), 2, 8, 0.134, 0),
			vm(SageMakerType("m5.xlarge"), 4, 16, 0.269, 0),
			vm(SageMakerType("m5.2xlarge"), 8, 32, 0.538, 0),
			vm(SageMakerType("m5.4xlarge"), 16, 64, 1.075, 0),
			mlp2,
		},
		Serverless: Serverless{
			Name:               "lambda",
			MinMemoryMB:        LambdaMinMemoryMB,
			MaxMemoryMB:        LambdaMaxMemoryMB,
			FullVCPUMemoryMB:   LambdaFullVCPUMemoryMB,
			PricePerGBSecond:   LambdaPricePerGBSecond,
			PricePerInvocation: LambdaPricePerInvocation,
			Granularity:        LambdaGranularity,
			ColdStart:          DefaultColdStart,
			KeepAlive:          LambdaKeepAlive,
			Concurrency:        LambdaConcurrency,
		},
		Spot: Spot{InterruptionsPerHour: DefaultSpotInterruptionsPerHour, Notice: SpotNotice},
	}
}
