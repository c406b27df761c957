package cost

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// PriceSeries is a step function of price (dollars per hour) over time since the start of a run.
type PriceSeries struct {
	// At holds the offsets at which each price starts, ascending; Price the matching prices.
	At    []time.Duration
	Price []float64
}

// PriceAt returns the price in force at offset t (the first price before the series starts).
func (p PriceSeries) PriceAt(t time.Duration) float64 {
	if len(p.At) == 0 {
		return 0
	}
	i := sort.Search(len(p.At), func(i int) bool { return p.At[i] > t })
	if i == 0 {
		return p.Price[0]
	}
	return p.Price[i-1]
}

// Cost integrates the price over [from, to) (offsets), in dollars.
func (p PriceSeries) Cost(from, to time.Duration) float64 {
	if to <= from || len(p.At) == 0 {
		return 0
	}
	var sum float64
	t := from
	for t < to {
		i := sort.Search(len(p.At), func(i int) bool { return p.At[i] > t })
		end := to
		if i < len(p.At) && p.At[i] < end {
			end = p.At[i]
		}
		price := p.Price[0]
		if i > 0 {
			price = p.Price[i-1]
		}
		sum += price * (end - t).Hours()
		t = end
	}
	return sum
}

// maxSpotRows bounds a spot price file.
const maxSpotRows = 1 << 20

// ReadSpotPrices reads a spot price table in Cocktail's spot.csv form: a header "time,<col>,..."
// and one row per step, the first column a step index, the others prices in dollars per hour.
// Step k (1-based as in the file, or 0-based) starts at (k - first) × step. It returns one
// series per price column, keyed by the header's column name.
func ReadSpotPrices(r io.Reader, step time.Duration) (map[string]PriceSeries, error) {
	if step <= 0 {
		return nil, fmt.Errorf("read spot prices: step must be > 0, got %v", step)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("read spot prices: %w", err)
		}
		return nil, fmt.Errorf("read spot prices: empty input")
	}
	header := strings.Split(strings.TrimSpace(sc.Text()), ",")
	if len(header) < 2 {
		return nil, fmt.Errorf("read spot prices: header %q: need a time column and at least one price column", sc.Text())
	}
	cols := header[1:]
	out := make(map[string]PriceSeries, len(cols))
	var first float64
	line, rows := 1, 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		rows++
		if rows > maxSpotRows {
			return nil, fmt.Errorf("read spot prices: more than %d rows", maxSpotRows)
		}
		f := strings.Split(text, ",")
		if len(f) != len(header) {
			return nil, fmt.Errorf("read spot prices: line %d: %d fields, want %d", line, len(f), len(header))
		}
		k, err := strconv.ParseFloat(strings.TrimSpace(f[0]), 64)
		if err != nil || math.IsNaN(k) || math.IsInf(k, 0) {
			return nil, fmt.Errorf("read spot prices: line %d: bad step %q", line, f[0])
		}
		if rows == 1 {
			first = k
		}
		at := time.Duration((k - first) * float64(step))
		for j, c := range cols {
			v, err := strconv.ParseFloat(strings.TrimSpace(f[j+1]), 64)
			if err != nil || !(v >= 0) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("read spot prices: line %d column %s: bad price %q", line, c, f[j+1])
			}
			s := out[c]
			if n := len(s.At); n > 0 && at <= s.At[n-1] {
				return nil, fmt.Errorf("read spot prices: line %d: step %v not after the previous one", line, f[0])
			}
			s.At = append(s.At, at)
			s.Price = append(s.Price, v)
			out[c] = s
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read spot prices: %w", err)
	}
	if rows == 0 {
		return nil, fmt.Errorf("read spot prices: no rows")
	}
	return out, nil
}

// CocktailSpotColumns maps the columns of Cocktail's spot.csv to the c5 sizes they price
// (Cocktail App. D: four C5 sizes, smallest first).
var CocktailSpotColumns = map[string]string{
	"spot1": "c5.large", "spot2": "c5.xlarge", "spot3": "c5.2xlarge", "spot4": "c5.4xlarge",
}
