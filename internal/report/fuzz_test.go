package report

import (
	"strings"
	"testing"
)

// FuzzReadSeriesCSV: the series reader never panics, and what it accepts has non-decreasing time
// and one instance count per type.
func FuzzReadSeriesCSV(f *testing.F) {
	f.Add("policy,t_s,arrival_rps,instances_c5.large,serverless_instances,p95_ms,mean_batch_size\na,60,1.5,2,0,120,NaN\na,120,2,3,1,130,4\n")
	f.Add("t_s,cost_vm_usd\n1,0.1\n2,0.2\n")
	f.Add("policy,t_s\n\"a,b\",1\n")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ReadSeriesCSV(strings.NewReader(in), "p")
		if err != nil {
			return
		}
		for pol, s := range got {
			for i, p := range s.Points {
				if len(p.Instances) != len(s.Types) {
					t.Fatalf("%s point %d: %d counts for %d types", pol, i, len(p.Instances), len(s.Types))
				}
				if i > 0 && p.T < s.Points[i-1].T {
					t.Fatalf("%s point %d: time goes back", pol, i)
				}
			}
		}
	})
}

// FuzzReadCCDFCSV: the CCDF reader never panics, and what it accepts is a valid CCDF.
func FuzzReadCCDFCSV(f *testing.F) {
	f.Add("policy,latency_ms,exceeded\na,1,0.5\na,2,0.1\nb,0,1\n")
	f.Add("latency_ms,exceeded\n0,1\n10,0\n")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ReadCCDFCSV(strings.NewReader(in), "p")
		if err != nil {
			return
		}
		for pol, pts := range got {
			for i, p := range pts {
				if !(p.Exceeded >= 0 && p.Exceeded <= 1) || !(p.LatencyMS >= 0) {
					t.Fatalf("%s point %d out of range: %+v", pol, i, p)
				}
				if i > 0 && (p.LatencyMS < pts[i-1].LatencyMS || p.Exceeded > pts[i-1].Exceeded) {
					t.Fatalf("%s point %d not monotone", pol, i)
				}
			}
		}
	})
}

// FuzzReadSummaries: the summaries reader never panics and never returns a summary without a
// policy.
func FuzzReadSummaries(f *testing.F) {
	f.Add(`[{"policy":"a","slo":{"threshold_ms":200,"target":0.98}}]`)
	f.Add(`{"policy":"b","cost_usd":{"total":1}}`)
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ReadSummaries(strings.NewReader(in))
		if err != nil {
			return
		}
		for i, s := range got {
			if s.Policy == "" {
				t.Fatalf("summary %d has no policy", i)
			}
		}
	})
}
