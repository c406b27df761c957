package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/sloserve/sloserve/internal/slo"
)

// The files of a run directory (docs/report.md). Only SummariesFile is required.
const (
	// SummariesFile holds the JSON array of slo.Summary, one per policy (or one Summary object),
	// as `sloserve sim --json` prints it.
	SummariesFile = "summaries.json"
	// SeriesFile holds every policy's time series in one CSV with a leading policy column, as
	// `sloserve sim --series` writes it.
	SeriesFile = "series.csv"
	// SeriesSuffix names a per-policy series CSV without the policy column: <policy>.series.csv.
	SeriesSuffix = ".series.csv"
	// CCDFFile holds every policy's latency CCDF in one CSV: policy,latency_ms,exceeded.
	CCDFFile = "ccdf.csv"
	// CCDFSuffix names a per-policy CCDF CSV without the policy column: <policy>.ccdf.csv.
	CCDFSuffix = ".ccdf.csv"
)

// maxFileBytes bounds every file read from a run directory.
const maxFileBytes = 256 << 20

// Run is what a run directory holds, in the order of its summaries.
type Run struct {
	// Policies lists the policies in the order of the summaries, then any policy that only has a
	// series or a CCDF, sorted.
	Policies []string
	// Summaries are keyed by policy.
	Summaries map[string]slo.Summary
	// Series are keyed by policy; a policy may have none.
	Series map[string]*Series
	// CCDF are keyed by policy; a policy may have none (the figure then uses its percentiles).
	CCDF map[string][]CCDFPoint
}

// Series is one policy's time series, one Point per sampling period.
type Series struct {
	// Types names the VM instance types in the order of Point.Instances.
	Types  []string
	Points []Point
}

// Point is the state of a run at the end of one series period (the columns of sim's series CSV).
type Point struct {
	// T is the offset from the start of the run, seconds.
	T float64
	// ArrivalRPS is the mean arrival rate over the period, requests per second.
	ArrivalRPS float64
	// Instances counts VM instances per type, parallel to Series.Types.
	Instances []float64
	// Serverless counts function instances alive.
	Serverless float64
	// QueueLen is the VM queue length.
	QueueLen float64
	// P50MS, P95MS, P99MS are latency percentiles of the period, milliseconds.
	P50MS, P95MS, P99MS float64
	// Attainment is the fraction of the period's requests that met the SLO.
	Attainment float64
	// CostVM and CostServerless are the dollars spent so far.
	CostVM, CostServerless float64
	// MeanBatchSize is the mean size of the batches dispatched in the period; NaN when the
	// series has no mean_batch_size column.
	MeanBatchSize float64
}

// CCDFPoint is one point of a latency CCDF: the fraction of requests slower than LatencyMS.
type CCDFPoint struct {
	LatencyMS float64
	Exceeded  float64
}

// Load reads the run directory dir: SummariesFile (required), SeriesFile or <policy>.series.csv
// files, and CCDFFile or <policy>.ccdf.csv files (all optional).
func Load(dir string) (*Run, error) {
	b, err := readFile(filepath.Join(dir, SummariesFile))
	if err != nil {
		return nil, err
	}
	sums, err := ReadSummaries(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("report: %s: %w", SummariesFile, err)
	}
	run := &Run{Summaries: map[string]slo.Summary{}, Series: map[string]*Series{}, CCDF: map[string][]CCDFPoint{}}
	for _, s := range sums {
		if _, dup := run.Summaries[s.Policy]; dup {
			return nil, fmt.Errorf("report: %s: policy %q appears twice", SummariesFile, s.Policy)
		}
		run.Summaries[s.Policy] = s
		run.Policies = append(run.Policies, s.Policy)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(dir, name)
		switch {
		case e.IsDir():
		case name == SeriesFile || strings.HasSuffix(name, SeriesSuffix):
			b, err := readFile(path)
			if err != nil {
				return nil, err
			}
			byPolicy, err := ReadSeriesCSV(bytes.NewReader(b), strings.TrimSuffix(name, SeriesSuffix))
			if err != nil {
				return nil, fmt.Errorf("report: %s: %w", name, err)
			}
			for p, s := range byPolicy {
				if _, dup := run.Series[p]; dup {
					return nil, fmt.Errorf("report: %s: policy %q has a series in two files", name, p)
				}
				run.Series[p] = s
			}
		case name == CCDFFile || strings.HasSuffix(name, CCDFSuffix):
			b, err := readFile(path)
			if err != nil {
				return nil, err
			}
			byPolicy, err := ReadCCDFCSV(bytes.NewReader(b), strings.TrimSuffix(name, CCDFSuffix))
			if err != nil {
				return nil, fmt.Errorf("report: %s: %w", name, err)
			}
			for p, c := range byPolicy {
				if _, dup := run.CCDF[p]; dup {
					return nil, fmt.Errorf("report: %s: policy %q has a CCDF in two files", name, p)
				}
				run.CCDF[p] = c
			}
		}
	}
	var extra []string
	for p := range run.Series {
		if _, ok := run.Summaries[p]; !ok && !slices.Contains(extra, p) {
			extra = append(extra, p)
		}
	}
	for p := range run.CCDF {
		if _, ok := run.Summaries[p]; !ok && !slices.Contains(extra, p) {
			extra = append(extra, p)
		}
	}
	sort.Strings(extra)
	run.Policies = append(run.Policies, extra...)
	return run, nil
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	if len(b) > maxFileBytes {
		return nil, fmt.Errorf("report: %s is larger than %d bytes", path, maxFileBytes)
	}
	return b, nil
}

// ReadSummaries decodes a JSON array of slo.Summary, or a single Summary object. Every summary
// needs a non-empty policy name.
func ReadSummaries(r io.Reader) ([]slo.Summary, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSpace(b)
	var sums []slo.Summary
	switch {
	case len(b) > 0 && b[0] == '[':
		err = json.Unmarshal(b, &sums)
	case len(b) > 0 && b[0] == '{':
		var s slo.Summary
		err = json.Unmarshal(b, &s)
		sums = []slo.Summary{s}
	default:
		err = errors.New("want a JSON array of summaries or one summary object")
	}
	if err != nil {
		return nil, fmt.Errorf("summaries: %w", err)
	}
	for i, s := range sums {
		if s.Policy == "" {
			return nil, fmt.Errorf("summaries[%d]: missing policy", i)
		}
	}
	return sums, nil
}

// seriesColumns maps the series CSV's fixed column names to Point fields.
var seriesColumns = map[string]func(p *Point) *float64{
	"t_s":                  func(p *Point) *float64 { return &p.T },
	"arrival_rps":          func(p *Point) *float64 { return &p.ArrivalRPS },
	"serverless_instances": func(p *Point) *float64 { return &p.Serverless },
	"queue_len":            func(p *Point) *float64 { return &p.QueueLen },
	"p50_ms":               func(p *Point) *float64 { return &p.P50MS },
	"p95_ms":               func(p *Point) *float64 { return &p.P95MS },
	"p99_ms":               func(p *Point) *float64 { return &p.P99MS },
	"attainment":           func(p *Point) *float64 { return &p.Attainment },
	"cost_vm_usd":          func(p *Point) *float64 { return &p.CostVM },
	"cost_serverless_usd":  func(p *Point) *float64 { return &p.CostServerless },
	"mean_batch_size":      func(p *Point) *float64 { return &p.MeanBatchSize },
}

// ReadSeriesCSV reads a series CSV with a header (the columns of sim's Series.WriteCSV: t_s,
// arrival_rps, instances_<type>..., serverless_instances, queue_len, p50_ms, p95_ms, p99_ms,
// attainment, cost_vm_usd, cost_serverless_usd, and optionally mean_batch_size; unknown columns
// are ignored). With a leading "policy" column the rows are split by policy; without one they
// all belong to defaultPolicy. t_s is required and must not decrease within a policy.
func ReadSeriesCSV(r io.Reader, defaultPolicy string) (map[string]*Series, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = false
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	polCol, tCol := -1, -1
	var types []string
	typeCol := map[int]int{}
	fieldCol := map[int]func(*Point) *float64{}
	for i, h := range header {
		h = strings.TrimSpace(h)
		switch {
		case h == "policy":
			polCol = i
		case strings.HasPrefix(h, "instances_") && len(h) > len("instances_"):
			typeCol[i] = len(types)
			types = append(types, strings.TrimPrefix(h, "instances_"))
		case seriesColumns[h] != nil:
			if h == "t_s" {
				tCol = i
			}
			fieldCol[i] = seriesColumns[h]
		}
	}
	if tCol < 0 {
		return nil, errors.New(`header: missing the "t_s" column`)
	}
	if polCol < 0 && defaultPolicy == "" {
		return nil, errors.New(`header: missing the "policy" column`)
	}
	out := map[string]*Series{}
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		policy := defaultPolicy
		if polCol >= 0 {
			policy = strings.TrimSpace(rec[polCol])
			if policy == "" {
				return nil, fmt.Errorf("line %d: empty policy", line)
			}
		}
		s := out[policy]
		if s == nil {
			s = &Series{Types: types}
			out[policy] = s
		}
		p := Point{Instances: make([]float64, len(types)), MeanBatchSize: math.NaN()}
		for i, v := range rec {
			var dst *float64
			if k, ok := typeCol[i]; ok {
				dst = &p.Instances[k]
			} else if f := fieldCol[i]; f != nil {
				dst = f(&p)
			} else {
				continue
			}
			x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || math.IsInf(x, 0) || (math.IsNaN(x) && dst != &p.MeanBatchSize) {
				return nil, fmt.Errorf("line %d: column %q: %q is not a finite number", line, header[i], v)
			}
			*dst = x
		}
		if n := len(s.Points); n > 0 && p.T < s.Points[n-1].T {
			return nil, fmt.Errorf("line %d: policy %q: t_s %g goes back from %g", line, policy, p.T, s.Points[n-1].T)
		}
		s.Points = append(s.Points, p)
	}
	return out, nil
}

// ReadCCDFCSV reads a latency CCDF with a header latency_ms,exceeded (and a leading "policy"
// column, or all rows belong to defaultPolicy). Latencies must be finite, ≥ 0 and not decrease;
// exceeded fractions must be in [0, 1] and not increase.
func ReadCCDFCSV(r io.Reader, defaultPolicy string) (map[string][]CCDFPoint, error) {
	cr := csv.NewReader(r)
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	polCol, latCol, excCol := -1, -1, -1
	for i, h := range header {
		switch strings.TrimSpace(h) {
		case "policy":
			polCol = i
		case "latency_ms":
			latCol = i
		case "exceeded":
			excCol = i
		}
	}
	if latCol < 0 || excCol < 0 {
		return nil, errors.New(`header: want columns "latency_ms" and "exceeded"`)
	}
	if polCol < 0 && defaultPolicy == "" {
		return nil, errors.New(`header: missing the "policy" column`)
	}
	out := map[string][]CCDFPoint{}
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		policy := defaultPolicy
		if polCol >= 0 {
			if policy = strings.TrimSpace(rec[polCol]); policy == "" {
				return nil, fmt.Errorf("line %d: empty policy", line)
			}
		}
		lat, err1 := strconv.ParseFloat(strings.TrimSpace(rec[latCol]), 64)
		exc, err2 := strconv.ParseFloat(strings.TrimSpace(rec[excCol]), 64)
		if err1 != nil || err2 != nil || !(lat >= 0) || math.IsInf(lat, 0) || !(exc >= 0 && exc <= 1) {
			return nil, fmt.Errorf("line %d: want latency_ms ≥ 0 and exceeded in [0, 1], got %q, %q", line, rec[latCol], rec[excCol])
		}
		pts := out[policy]
		if n := len(pts); n > 0 && (lat < pts[n-1].LatencyMS || exc > pts[n-1].Exceeded) {
			return nil, fmt.Errorf("line %d: policy %q: latencies must not decrease and exceeded fractions must not increase", line, policy)
		}
		out[policy] = append(pts, CCDFPoint{LatencyMS: lat, Exceeded: exc})
	}
	return out, nil
}
