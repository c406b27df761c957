package ensemble

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/ensemble"
	"github.com/sloserve/sloserve/internal/trace"
)

// Cocktail data files, relative to the shared data directory (../shared/data from the repo root).
const (
	CocktailClassTableFile = "ensembles/cocktail-imagenet-class-correct.csv"
	CocktailConstantsFile  = "ensembles/cocktail-constants.json"
	CocktailSpotPricesFile = "prices/cocktail-spot-prices.csv"
	CocktailTwitterTrace   = "traces/twitter-2017-05-25.rps.csv"
	// CocktailImagesPerClass is the number of ImageNet validation images per class the table
	// counts correct answers of.
	CocktailImagesPerClass = 50
	// CocktailSpotStep is the length of one row of Cocktail's spot.csv: 347 rows over "a 2-week
	// period" (§6.2.3) plotted in hours (App. F, Fig. 18), so one row per hour.
	CocktailSpotStep = time.Hour
	// CocktailMeanRPS is the mean rate Cocktail scales its traces to (§5.2: "the first 1 hour
	// sample ... scaled to have an average request rate of 50 req/sec").
	CocktailMeanRPS = 50.0
	// CocktailDuration is the length of Cocktail's trace samples (§5.2: the first hour).
	CocktailDuration = time.Hour
)

// CocktailData is Cocktail's experimental setup: the per-class ImageNet table, the nine models
// (Table 1 latency and P_f, the table's mean accuracy), the request constraints and spot prices.
type CocktailData struct {
	Table       *ensemble.ClassTable
	Models      []ensemble.Model
	Constraints []EnsembleConstraint
	SpotPrices  map[string]cost.PriceSeries
}

// LoadCocktailData reads Cocktail's setup from the shared data directory dir.
func LoadCocktailData(dir string) (*CocktailData, error) {
	f, err := os.Open(filepath.Join(dir, CocktailClassTableFile))
	if err != nil {
		return nil, fmt.Errorf("cocktail data: %w", err)
	}
	defer f.Close()
	tab, err := ensemble.ReadClassTable(f, CocktailImagesPerClass)
	if err != nil {
		return nil, fmt.Errorf("cocktail data: %w", err)
	}
	d := &CocktailData{Table: tab}
	for _, m := range ensemble.ImageNetModels() {
		if i := tab.ModelIndex(m.Name); i >= 0 {
			m.Accuracy = tab.Accuracy(i)
			d.Models = append(d.Models, m)
		}
	}
	cf, err := os.Open(filepath.Join(dir, CocktailConstantsFile))
	if err != nil {
		return nil, fmt.Errorf("cocktail data: %w", err)
	}
	defer cf.Close()
	if d.Constraints, err = ReadCocktailConstraints(cf); err != nil {
		return nil, err
	}
	sf, err := os.Open(filepath.Join(dir, CocktailSpotPricesFile))
	if err != nil {
		return nil, fmt.Errorf("cocktail data: %w", err)
	}
	defer sf.Close()
	cols, err := cost.ReadSpotPrices(sf, CocktailSpotStep)
	if err != nil {
		return nil, fmt.Errorf("cocktail data: %w", err)
	}
	d.SpotPrices = map[string]cost.PriceSeries{}
	for col, s := range cols {
		if t, ok := cost.CocktailSpotColumns[col]; ok {
			d.SpotPrices[t] = s
		}
	}
	return d, nil
}

// maxConstantsBytes bounds cocktail-constants.json.
const maxConstantsBytes = 1 << 20

// ReadCocktailConstraints decodes the request constraints of Cocktail's frontend
// (cocktail-constants.json: constants_py.constraint_table, "request field 'constraint' indexes
// these lists"): one class per index, equally likely — the request sender draws the index from
// its workload file, which is not published.
func ReadCocktailConstraints(r io.Reader) ([]EnsembleConstraint, error) {
	var doc struct {
		Constants struct {
			Table struct {
				Accuracy  []float64 `json:"accuracy"`
				LatencyMS []float64 `json:"latency_ms"`
			} `json:"constraint_table"`
		} `json:"constants_py"`
	}
	if err := json.NewDecoder(io.LimitReader(r, maxConstantsBytes)).Decode(&doc); err != nil {
		return nil, fmt.Errorf("cocktail constraints: %w", err)
	}
	t := doc.Constants.Table
	if len(t.Accuracy) == 0 || len(t.Accuracy) != len(t.LatencyMS) {
		return nil, fmt.Errorf("cocktail constraints: constants_py.constraint_table needs equally long, non-empty accuracy and latency_ms lists, got %d and %d",
			len(t.Accuracy), len(t.LatencyMS))
	}
	out := make([]EnsembleConstraint, len(t.Accuracy))
	for i := range t.Accuracy {
		c := ensemble.Constraint{Latency: time.Duration(t.LatencyMS[i] * float64(time.Millisecond)), Accuracy: t.Accuracy[i]}
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("cocktail constraints: constraint %d: %w", i, err)
		}
		out[i] = EnsembleConstraint{Constraint: c, Weight: 1}
	}
	return out, nil
}

// CocktailTraceOptions returns the trace options of Cocktail's setup for tr: the first
// duration (0 = CocktailDuration) scaled to a mean of meanRPS (0 = CocktailMeanRPS).
func CocktailTraceOptions(tr *trace.Trace, duration time.Duration, meanRPS float64) (trace.Options, error) {
	if duration == 0 {
		duration = CocktailDuration
	}
	if meanRPS == 0 {
		meanRPS = CocktailMeanRPS
	}
	if duration < 0 || meanRPS < 0 {
		return trace.Options{}, fmt.Errorf("cocktail trace: duration %v and mean rate %v must be ≥ 0", duration, meanRPS)
	}
	cut, err := tr.With(trace.Options{To: duration})
	if err != nil {
		return trace.Options{}, err
	}
	m := cut.MeanRate()
	if !(m > 0) {
		return trace.Options{}, errors.New("cocktail trace: the sample has no requests")
	}
	return trace.Options{To: duration, RateScale: meanRPS / m}, nil
}

// NewEnsembleWorkload assembles the workload of data over tr (already cut and scaled), with
// arrivals seeded by seed; InitialRPS is the first minute's mean rate and PeakRPS the highest
// one-minute rate.
func NewEnsembleWorkload(data *CocktailData, tr *trace.Trace, seed uint64) EnsembleWorkload {
	counts := trace.Counts(tr.Arrivals(seed), time.Minute, tr.Duration())
	var peak, first float64
	for i, c := range counts {
		r := float64(c) / 60
		if i == 0 {
			first = r
		}
		peak = max(peak, r)
	}
	return EnsembleWorkload{Table: data.Table, Models: data.Models, Constraints: data.Constraints,
		Arrivals: tr.Arrivals(seed), Trace: tr.Name, InitialRPS: first, PeakRPS: peak}
}
