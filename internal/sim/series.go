package sim

import "time"

// SeriesPoint is the state of a run at the end of one series period.
type SeriesPoint struct {
	// At is the offset from the start of the run.
	At time.Duration
	// ArrivalRPS is the mean arrival rate over the period, requests per second.
	ArrivalRPS float64
	// Instances counts launching or ready VM instances per type, parallel to Series.Types
	// (shorter when types were first used later).
	Instances []int
	// Serverless counts function instances alive (busy or warm).
	Serverless int
	// QueueLen is the VM queue length.
	QueueLen int
	// P50MS, P95MS, P99MS are latency percentiles of requests completed in the period, ms.
	P50MS, P95MS, P99MS float64
	// Attainment is the fraction of requests finished in the period within the SLO.
	Attainment float64
	// CostVM and CostServerless are the dollars spent so far (VMs at their hourly price for the
	// time they have run, before billing minimums).
	CostVM, CostServerless float64
}

// Series is a run's time series.
type Series struct {
	// Types names the VM instance types in the order of SeriesPoint.Instances.
	Types  []string
	Points []SeriesPoint
}

func (e *engine) addSeriesPoint() {
	p := SeriesPoint{At: time.Duration(e.now), QueueLen: e.vq.N, Instances: make([]int, len(e.types))}
	var span float64
	if n := len(e.series.Points); n > 0 {
		span = (time.Duration(e.now) - e.series.Points[n-1].At).Seconds()
	} else {
		span = time.Duration(e.now).Seconds()
	}
	if span > 0 {
		p.ArrivalRPS = float64(e.perArr) / span
	}
	for i, ty := range e.types {
		p.Instances[i] = ty.alive
		p.CostVM += ty.costUSD
	}
	for _, i := range e.live {
		in := &e.insts[i]
		if in.ended == 0 {
			ty := e.types[in.typ]
			price := ty.it.PricePerHour
			if ty.spot {
				price = ty.it.SpotPricePerHour
				if ty.series != nil {
					price = ty.series.PriceAt(time.Duration(e.now))
				}
			}
			p.CostVM += price * time.Duration(e.now-in.launched).Hours()
		}
	}
	e.expireFns()
	p.Serverless = e.fnIdle.N + e.fnBusy
	p.CostServerless = e.slCost
	if e.period.Count() > 0 {
		p.P50MS = ms(e.period.Quantile(0.5))
		p.P95MS = ms(e.period.Quantile(0.95))
		p.P99MS = ms(e.period.Quantile(0.99))
	}
	p.Attainment = 1
	if e.perDone > 0 {
		p.Attainment = float64(e.perMet) / float64(e.perDone)
	}
	e.period.Reset()
	e.perArr, e.perMet, e.perDone = 0, 0, 0
	e.series.Types = e.series.Types[:0]
	for _, ty := range e.types {
		e.series.Types = append(e.series.Types, ty.name)
	}
	e.series.Points = append(e.series.Points, p)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
