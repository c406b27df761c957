package trace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ErrFormat is wrapped by every reader error caused by the input's content.
var ErrFormat = errors.New("trace format")

// Limits that keep a malformed file from exhausting memory.
const (
	// MaxSteps is the largest step index a rate series may use: 2^24 steps (194 days of seconds).
	MaxSteps = 1 << 24
	// MaxOffset is the largest arrival offset an arrival list may reach: 10 years.
	MaxOffset = 10 * 365 * 24 * time.Hour
)

// Series layouts recognised by ReadSeries from their header line.
var seriesHeaders = []struct {
	header string
	step   time.Duration
	isRate bool // values are rates per second rather than counts per step
}{
	{"t_s,count", time.Second, false},   // twitter-2017-05-25.rps.csv
	{"t_min,count", time.Minute, false}, // azure-functions/fnN.rpm.csv
	// azure-functions/burst300-N.csv: 3600 rows for a 60-minute series whose value changes every
	// 6 rows, so each row is one second.
	{"step,rps", time.Second, true},
}

// ReadSeries reads a rate series CSV whose header names its layout: "t_s,count" (requests per
// second), "t_min,count" (requests per minute) or "step,rps" (a rate per 1 s step). Rows are
// "index,value" with increasing integer indexes; missing indexes have rate 0. In the count
// layouts a repeated index adds its count to the step (the Twitter trace repeats the second at
// 22 of its hour boundaries, where its hourly files overlap).
func ReadSeries(r io.Reader, name string) (*Trace, error) {
	sc := newScanner(r)
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("read trace %s: %w", name, err)
		}
		return nil, fmt.Errorf("read trace %s: empty input: %w", name, ErrFormat)
	}
	head := strings.ToLower(strings.TrimSpace(strings.TrimPrefix(sc.Text(), "\ufeff")))
	for _, h := range seriesHeaders {
		if head == h.header {
			return readSeriesRows(sc, name, h.step, h.isRate)
		}
	}
	return nil, fmt.Errorf("read trace %s: line 1: unknown header %q (want one of t_s,count | t_min,count | step,rps): %w",
		name, truncate(head), ErrFormat)
}

// ReadSeriesAs reads headerless "index,value" rows as a rate series with the given step; values
// are rates per second when isRate, else counts per step.
func ReadSeriesAs(r io.Reader, name string, step time.Duration, isRate bool) (*Trace, error) {
	if step <= 0 {
		return nil, fmt.Errorf("read trace %s: step must be > 0, got %v", name, step)
	}
	return readSeriesRows(newScanner(r), name, step, isRate)
}

func readSeriesRows(sc *bufio.Scanner, name string, step time.Duration, isRate bool) (*Trace, error) {
	var rates []float64
	line := 1
	last := -1
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		is, vs, ok := strings.Cut(s, ",")
		if !ok {
			return nil, fmt.Errorf("read trace %s: line %d: want index,value, got %q: %w", name, line, truncate(s), ErrFormat)
		}
		idx, err := strconv.Atoi(strings.TrimSpace(is))
		if err != nil || idx < 0 || idx >= MaxSteps {
			return nil, fmt.Errorf("read trace %s: line %d: index %q must be an integer in [0, %d): %w", name, line, truncate(is), MaxSteps, ErrFormat)
		}
		if idx < last || idx == last && isRate {
			return nil, fmt.Errorf("read trace %s: line %d: index %d does not increase (previous %d): %w", name, line, idx, last, ErrFormat)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(vs), 64)
		if err != nil || !(v >= 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("read trace %s: line %d: value %q must be a finite number ≥ 0: %w", name, line, truncate(vs), ErrFormat)
		}
		for len(rates) < idx {
			rates = append(rates, 0)
		}
		if !isRate {
			v /= step.Seconds()
		}
		if idx == last {
			rates[idx] += v // a repeated index of a count layout adds its count
		} else {
			rates = append(rates, v)
		}
		last = idx
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read trace %s: line %d: %w", name, line+1, err)
	}
	if len(rates) == 0 {
		return nil, fmt.Errorf("read trace %s: no rows: %w", name, ErrFormat)
	}
	return NewSeries(name, step, rates)
}

// ReadInterarrivals reads an arrival list given as one inter-arrival time in seconds per line
// (the Twitter TW_may25_H-H+1 files); the first arrival is at its own gap after 0.
func ReadInterarrivals(r io.Reader, name string) (*Trace, error) {
	sc := newScanner(r)
	var (
		times []time.Duration
		t     float64 // seconds
		line  int
	)
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		g, err := strconv.ParseFloat(s, 64)
		if err != nil || !(g >= 0) || math.IsInf(g, 0) {
			return nil, fmt.Errorf("read trace %s: line %d: inter-arrival %q must be a finite number of seconds ≥ 0: %w", name, line, truncate(s), ErrFormat)
		}
		t += g
		if t > MaxOffset.Seconds() {
			return nil, fmt.Errorf("read trace %s: line %d: arrival at %gs is beyond %v: %w", name, line, t, MaxOffset, ErrFormat)
		}
		times = append(times, time.Duration(t*1e9))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read trace %s: line %d: %w", name, line+1, err)
	}
	if len(times) == 0 {
		return nil, fmt.Errorf("read trace %s: no inter-arrival times: %w", name, ErrFormat)
	}
	return NewList(name, times)
}

// AzureFunction identifies one row of the Azure Functions 2019 invocation files.
type AzureFunction struct {
	Owner, App, Function, Trigger string
}

// ReadAzureFunctions reads one day of the Azure Functions 2019 per-minute invocation counts
// (invocations_per_function_md.anon.d01.csv: HashOwner,HashApp,HashFunction,Trigger,1,…,1440)
// and returns the per-minute rate series of the sum of the rows that match selects (nil selects
// every row). It fails when no row matches.
func ReadAzureFunctions(r io.Reader, name string, match func(AzureFunction) bool) (*Trace, error) {
	sc := newScanner(r)
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("read trace %s: %w", name, err)
		}
		return nil, fmt.Errorf("read trace %s: empty input: %w", name, ErrFormat)
	}
	head := strings.Split(strings.TrimSpace(strings.TrimPrefix(sc.Text(), "\ufeff")), ",")
	want := []string{"HashOwner", "HashApp", "HashFunction", "Trigger"}
	if len(head) < len(want)+1 {
		return nil, fmt.Errorf("read trace %s: line 1: want HashOwner,HashApp,HashFunction,Trigger,1,2,…: %w", name, ErrFormat)
	}
	for i, w := range want {
		if head[i] != w {
			return nil, fmt.Errorf("read trace %s: line 1: column %d is %q, want %q: %w", name, i+1, truncate(head[i]), w, ErrFormat)
		}
	}
	minutes := len(head) - len(want)
	for i := range minutes {
		if head[len(want)+i] != strconv.Itoa(i+1) {
			return nil, fmt.Errorf("read trace %s: line 1: column %d is %q, want minute %d: %w", name, len(want)+i+1, truncate(head[len(want)+i]), i+1, ErrFormat)
		}
	}
	counts := make([]float64, minutes)
	matched := 0
	line := 1
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		var f AzureFunction
		rest := s
		for i, dst := range []*string{&f.Owner, &f.App, &f.Function, &f.Trigger} {
			var ok bool
			*dst, rest, ok = strings.Cut(rest, ",")
			if !ok {
				return nil, fmt.Errorf("read trace %s: line %d: %d fields, want %d: %w", name, line, i+1, len(head), ErrFormat)
			}
		}
		if match != nil && !match(f) {
			continue
		}
		matched++
		for m := range minutes {
			var field string
			field, rest, _ = strings.Cut(rest, ",")
			c, err := strconv.ParseFloat(field, 64)
			if err != nil || !(c >= 0) || math.IsInf(c, 0) {
				return nil, fmt.Errorf("read trace %s: line %d: minute %d count %q must be a finite number ≥ 0: %w", name, line, m+1, truncate(field), ErrFormat)
			}
			counts[m] += c
		}
		if rest != "" {
			return nil, fmt.Errorf("read trace %s: line %d: more than %d fields: %w", name, line, len(head), ErrFormat)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read trace %s: line %d: %w", name, line+1, err)
	}
	if matched == 0 {
		return nil, fmt.Errorf("read trace %s: no function matched: %w", name, ErrFormat)
	}
	for i := range counts {
		counts[i] /= 60
	}
	return NewSeries(name, time.Minute, counts)
}

// ReadMatrix2 reads a 2×2 matrix written as two lines of two comma-separated numbers (the BATCH
// repository's MAPh_D0 and MAPh_D1 files).
func ReadMatrix2(r io.Reader) ([2][2]float64, error) {
	var m [2][2]float64
	sc := newScanner(r)
	row := 0
	for sc.Scan() {
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		if row == 2 {
			return m, fmt.Errorf("read matrix: more than 2 rows: %w", ErrFormat)
		}
		a, b, ok := strings.Cut(s, ",")
		if !ok || strings.Contains(b, ",") {
			return m, fmt.Errorf("read matrix: row %d: want 2 comma-separated numbers, got %q: %w", row+1, truncate(s), ErrFormat)
		}
		for j, f := range []string{a, b} {
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return m, fmt.Errorf("read matrix: row %d column %d: %q is not a finite number: %w", row+1, j+1, truncate(f), ErrFormat)
			}
			m[row][j] = v
		}
		row++
	}
	if err := sc.Err(); err != nil {
		return m, fmt.Errorf("read matrix: %w", err)
	}
	if row != 2 {
		return m, fmt.Errorf("read matrix: %d rows, want 2: %w", row, ErrFormat)
	}
	return m, nil
}

// ReadMAP2 reads a MAP(2) from its D0 and D1 matrix files and validates it.
func ReadMAP2(d0, d1 io.Reader) (MAP2, error) {
	var m MAP2
	var err error
	if m.D0, err = ReadMatrix2(d0); err != nil {
		return m, fmt.Errorf("read MAP D0: %w", err)
	}
	if m.D1, err = ReadMatrix2(d1); err != nil {
		return m, fmt.Errorf("read MAP D1: %w", err)
	}
	if err := m.Validate(); err != nil {
		return m, fmt.Errorf("read MAP: %w: %w", err, ErrFormat)
	}
	return m, nil
}

// OpenMAP2 reads the MAP(2) fit of hour h (1..24) from dir (e.g. batch-map-fits/twitter), whose
// files are MAPh_D0 and MAPh_D1.
func OpenMAP2(dir string, hour int) (MAP2, error) {
	f0, err := os.Open(filepath.Join(dir, fmt.Sprintf("MAP%d_D0", hour)))
	if err != nil {
		return MAP2{}, fmt.Errorf("open MAP fit: %w", err)
	}
	defer f0.Close()
	f1, err := os.Open(filepath.Join(dir, fmt.Sprintf("MAP%d_D1", hour)))
	if err != nil {
		return MAP2{}, fmt.Errorf("open MAP fit: %w", err)
	}
	defer f1.Close()
	m, err := ReadMAP2(f0, f1)
	if err != nil {
		return m, fmt.Errorf("%s hour %d: %w", dir, hour, err)
	}
	return m, nil
}

// Open reads a trace file, choosing the reader from its first line: a rate-series header
// (ReadSeries), the Azure Functions 2019 header (ReadAzureFunctions, all rows summed) or a number
// (ReadInterarrivals). The trace is named after the file's base name.
func Open(path string) (*Trace, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("open trace: %w", err)
	}
	name := filepath.Base(path)
	first, _, _ := bytes.Cut(data, []byte("\n"))
	first = bytes.TrimSpace(bytes.TrimPrefix(first, []byte("\ufeff")))
	switch {
	case bytes.HasPrefix(first, []byte("HashOwner,")):
		return ReadAzureFunctions(bytes.NewReader(data), name, nil)
	case len(first) > 0 && (first[0] >= '0' && first[0] <= '9' || first[0] == '.'):
		return ReadInterarrivals(bytes.NewReader(data), name)
	default:
		return ReadSeries(bytes.NewReader(data), name)
	}
}

// newScanner returns a line scanner that accepts lines up to 1 MiB (an Azure row is ~4 KiB).
func newScanner(r io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	return sc
}

// truncate shortens s for an error message.
func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
