package analytic

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"

	"gonum.org/v1/gonum/mat"
)

// ServiceModel gives the deterministic service time of a batch (BATCH §III-A, §VI-B) as a
// function of the batch size and the function's memory, and the domain where it is valid.
type ServiceModel interface {
	// ServiceTime returns the time in seconds to serve a batch of k requests with memoryMB MB.
	ServiceTime(k, memoryMB int) float64
	// Domain returns the batch sizes and memory sizes (MB, inclusive) the model is valid for.
	Domain() (batchMin, batchMax, memoryMinMB, memoryMaxMB int)
}

// Polynomial is a multivariable polynomial service-time model (BATCH §III-A, [44]):
// S(k, m) = Σ_{d=0..Degree} Σ_{i=0..d} c·k^{d−i}·m^i in seconds, for batch size k and memory m in
// MB, with the coefficients in that order — the order of BATCH's solver.py (t0 + t1·k + t2·m +
// t3·k² + t4·k·m + t5·m² + t6·k³ + …). A cubic fitted over a box of (k, m) is meaningless
// outside it, so the box is part of the model.
type Polynomial struct {
	// Name identifies the model, e.g. "TF-resnetV2".
	Name string `json:"name"`
	// Degree is the total degree of the polynomial (1–6).
	Degree int `json:"degree"`
	// Coef holds the (Degree+1)(Degree+2)/2 coefficients, seconds per unit of each term.
	Coef []float64 `json:"coefficients"`
	// BatchMin and BatchMax bound the batch sizes the fit covers (requests, inclusive).
	BatchMin int `json:"batch_min"`
	BatchMax int `json:"batch_max"`
	// MemoryMinMB and MemoryMaxMB bound the memory sizes the fit covers (MB, inclusive).
	MemoryMinMB int `json:"memory_min_mb"`
	MemoryMaxMB int `json:"memory_max_mb"`
}

var _ ServiceModel = Polynomial{}

// numTerms returns the number of monomials of total degree ≤ d in two variables.
func numTerms(d int) int { return (d + 1) * (d + 2) / 2 }

// monomials writes k^{d−i}·m^i for d = 0..deg, i = 0..d into dst.
func monomials(dst []float64, deg int, k, m float64) {
	idx := 0
	for d := 0; d <= deg; d++ {
		for i := 0; i <= d; i++ {
			dst[idx] = math.Pow(k, float64(d-i)) * math.Pow(m, float64(i))
			idx++
		}
	}
}

// Validate reports the first field that is out of range.
func (p Polynomial) Validate() error {
	switch {
	case p.Degree < 1 || p.Degree > 6:
		return fmt.Errorf("polynomial %q: degree %d must be in [1, 6]", p.Name, p.Degree)
	case len(p.Coef) != numTerms(p.Degree):
		return fmt.Errorf("polynomial %q: %d coefficients, degree %d needs %d", p.Name, len(p.Coef), p.Degree, numTerms(p.Degree))
	case p.BatchMin < 1 || p.BatchMax < p.BatchMin:
		return fmt.Errorf("polynomial %q: batch domain [%d, %d] is empty or below 1", p.Name, p.BatchMin, p.BatchMax)
	case p.MemoryMinMB < 1 || p.MemoryMaxMB < p.MemoryMinMB:
		return fmt.Errorf("polynomial %q: memory domain [%d, %d] MB is empty", p.Name, p.MemoryMinMB, p.MemoryMaxMB)
	}
	for i, c := range p.Coef {
		if math.IsNaN(c) || math.IsInf(c, 0) {
			return fmt.Errorf("polynomial %q: coefficient %d is %g", p.Name, i, c)
		}
	}
	return nil
}

// ServiceTime implements ServiceModel; it does not clamp to the domain.
func (p Polynomial) ServiceTime(k, memoryMB int) float64 {
	var buf [28]float64
	x := buf[:numTerms(p.Degree)]
	monomials(x, p.Degree, float64(k), float64(memoryMB))
	s := 0.0
	for i, c := range p.Coef {
		s += c * x[i]
	}
	return s
}

// Domain implements ServiceModel.
func (p Polynomial) Domain() (int, int, int, int) {
	return p.BatchMin, p.BatchMax, p.MemoryMinMB, p.MemoryMaxMB
}

// The BATCH polynomials, transcribed from rickypinci/BATCH solver.py (commit 7496cd2) as in
// /work/shared/data/profiles/batch-lambda-polynomials.json; fitted on AWS Lambda over batch 1–20
// and memory 1280–3008 MB, seconds.
var (
	// TFResnetV2 is BATCH's TensorFlow ResNet-v2 model, sloserve's default profile.
	TFResnetV2 = Polynomial{Name: "TF-resnetV2", Degree: 3, BatchMin: 1, BatchMax: 20, MemoryMinMB: 1280, MemoryMaxMB: 3008,
		Coef: []float64{4.10287326093357, 2.44209348386686, -0.003744827715921, 0.00146578966951, -0.001200716327886,
			1.54147156981117e-06, 0.000169790388555, -1.69402238148543e-06, 1.93096097179588e-07, -2.14320561298109e-10}}
	// TFInceptionV4 is BATCH's TensorFlow Inception-v4 model.
	TFInceptionV4 = Polynomial{Name: "TF-inceptionV4", Degree: 3, BatchMin: 1, BatchMax: 20, MemoryMinMB: 1280, MemoryMaxMB: 3008,
		Coef: []float64{4.98785373866948, 2.21290624531453, -0.006302148424865, 0.01220707314674, -0.001078252966917,
			2.93842054489054e-06, -0.000136439880153, -2.38944435771044e-06, 1.6826351295629e-07, -4.44821512957105e-10}}
	// MXNetResnet50 is BATCH's MXNet ResNet-50 model (a quartic).
	MXNetResnet50 = Polynomial{Name: "mxnet-resnet50", Degree: 4, BatchMin: 1, BatchMax: 20, MemoryMinMB: 1280, MemoryMaxMB: 3008,
		Coef: []float64{4.159625107884683, 2.6042179469237112, -0.010825805019675406, 0.009138187816342925, -0.0028596859100282783,
			9.69154925319072e-06, -0.0010892145857441117, 1.7781522992577246e-06, 1.226979037160046e-06, -3.604767989748986e-09,
			5.2168371220458194e-05, -3.0873547472152034e-07, 1.335682942382537e-09, -1.7570492803764548e-10, 4.756195437494171e-13}}
)

// ProfilePoint is one measured (or profiled) mean batch service time.
type ProfilePoint struct {
	// Batch is the batch size in requests.
	Batch int
	// MemoryMB is the function's memory in MB.
	MemoryMB int
	// Seconds is the mean service time of the batch.
	Seconds float64
}

// FitPolynomial fits a Polynomial of the given degree to profiled points by least squares on
// the relative error (each row divided by its measured time, so that the fit minimises the
// error that MAPE measures), in variables scaled to [0, 1] for conditioning; the domain is the
// bounding box of the points. It needs at least as many distinct points as coefficients.
func FitPolynomial(name string, points []ProfilePoint, degree int) (Polynomial, error) {
	if degree < 1 || degree > 6 {
		return Polynomial{}, fmt.Errorf("fit polynomial: degree %d must be in [1, 6]", degree)
	}
	nt := numTerms(degree)
	if len(points) < nt {
		return Polynomial{}, fmt.Errorf("fit polynomial: %d points for %d coefficients", len(points), nt)
	}
	p := Polynomial{Name: name, Degree: degree, BatchMin: math.MaxInt, MemoryMinMB: math.MaxInt}
	for i, pt := range points {
		if pt.Batch < 1 || pt.MemoryMB < 1 || !(pt.Seconds > 0) || math.IsInf(pt.Seconds, 0) {
			return Polynomial{}, fmt.Errorf("fit polynomial: point %d (batch %d, memory %d MB, %g s) is invalid", i, pt.Batch, pt.MemoryMB, pt.Seconds)
		}
		p.BatchMin, p.BatchMax = min(p.BatchMin, pt.Batch), max(p.BatchMax, pt.Batch)
		p.MemoryMinMB, p.MemoryMaxMB = min(p.MemoryMinMB, pt.MemoryMB), max(p.MemoryMaxMB, pt.MemoryMB)
	}
	ks, ms := float64(p.BatchMax), float64(p.MemoryMaxMB)
	a := mat.NewDense(len(points), nt, nil)
	y := mat.NewVecDense(len(points), nil)
	row := make([]float64, nt)
	for i, pt := range points {
		monomials(row, degree, float64(pt.Batch)/ks, float64(pt.MemoryMB)/ms)
		for j := range row {
			a.Set(i, j, row[j]/pt.Seconds)
		}
		y.SetVec(i, 1)
	}
	var c mat.VecDense
	if err := c.SolveVec(a, y); err != nil {
		return Polynomial{}, fmt.Errorf("fit polynomial: %w", err)
	}
	// Undo the scaling: the coefficient of k^{d−i} m^i was fitted for (k/ks)^{d−i} (m/ms)^i.
	p.Coef = make([]float64, nt)
	idx := 0
	for d := 0; d <= degree; d++ {
		for i := 0; i <= d; i++ {
			p.Coef[idx] = c.AtVec(idx) / (math.Pow(ks, float64(d-i)) * math.Pow(ms, float64(i)))
			idx++
		}
	}
	return p, p.Validate()
}

// MAPE returns the mean absolute percentage error (in percent) of a model on points.
func MAPE(s ServiceModel, points []ProfilePoint) float64 {
	if len(points) == 0 {
		return math.NaN()
	}
	e := 0.0
	for _, pt := range points {
		e += math.Abs(s.ServiceTime(pt.Batch, pt.MemoryMB)-pt.Seconds) / pt.Seconds
	}
	return 100 * e / float64(len(points))
}

// batchPolynomialsFile is the shape of /work/shared/data/profiles/batch-lambda-polynomials.json.
type batchPolynomialsFile struct {
	Poly struct {
		Coefficients map[string]map[string]float64 `json:"coefficients"`
	} `json:"batch_service_time_polynomial"`
}

// ErrUnknownProfile reports a profile name that a profile file does not contain.
var ErrUnknownProfile = errors.New("unknown profile")

// ReadPolynomial reads a service-time polynomial from JSON: either a Polynomial object as
// written by encoding/json, or BATCH's published file (batch-lambda-polynomials.json), from
// which the model called name is taken (domain batch 1–20, memory 1280–3008 MB, as noted there).
func ReadPolynomial(r io.Reader, name string) (Polynomial, error) {
	data, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return Polynomial{}, fmt.Errorf("read profile: %w", err)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return Polynomial{}, fmt.Errorf("read profile: %w", err)
	}
	if _, ok := probe["batch_service_time_polynomial"]; ok {
		var f batchPolynomialsFile
		if err := json.Unmarshal(data, &f); err != nil {
			return Polynomial{}, fmt.Errorf("read profile: %w", err)
		}
		cs, ok := f.Poly.Coefficients[name]
		if !ok {
			names := make([]string, 0, len(f.Poly.Coefficients))
			for n := range f.Poly.Coefficients {
				names = append(names, n)
			}
			sort.Strings(names)
			return Polynomial{}, fmt.Errorf("read profile: %w %q (have %v)", ErrUnknownProfile, name, names)
		}
		p := Polynomial{Name: name, BatchMin: 1, BatchMax: 20, MemoryMinMB: 1280, MemoryMaxMB: 3008}
		for d := 1; d <= 6; d++ {
			if numTerms(d) == len(cs) {
				p.Degree = d
			}
		}
		p.Coef = make([]float64, len(cs))
		for i := range p.Coef {
			v, ok := cs["t"+strconv.Itoa(i)]
			if !ok {
				return Polynomial{}, fmt.Errorf("read profile: %s: coefficient t%d missing", name, i)
			}
			p.Coef[i] = v
		}
		return p, p.Validate()
	}
	var p Polynomial
	if err := json.Unmarshal(data, &p); err != nil {
		return Polynomial{}, fmt.Errorf("read profile: %w", err)
	}
	return p, p.Validate()
}
