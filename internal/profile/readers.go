package profile

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// maxProfileBytes bounds every profile file a reader accepts.
const maxProfileBytes = 16 << 20

func durationOf(ns float64) time.Duration { return time.Duration(math.Round(ns)) }

func msDuration(ms float64) time.Duration { return durationOf(ms * float64(time.Millisecond)) }

func validMS(ms float64) bool { return ms > 0 && ms < 1e9 && !math.IsNaN(ms) }

func readAll(r io.Reader, what string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxProfileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if len(b) > maxProfileBytes {
		return nil, fmt.Errorf("read %s: larger than %d bytes", what, maxProfileBytes)
	}
	return b, nil
}

// ---------------------------------------------------------------------------------------------
// INFless profiler output.

// INFlessInfeasibleMS is the latency INFless's profiler writes for a configuration that failed;
// values above 10,000 ms are timeouts (infless-constants.json, profile_file_format).
const INFlessInfeasibleMS = 9999

// INFlessPoint is one line of an INFless profile: a model on cpu threads and a GPU SM share
// (percent; 0 = CPU only) serves a batch in Latency.
type INFlessPoint struct {
	CPU, GPU, Batch int
	Latency         time.Duration
}

// INFlessProfile is an INFless profile file (INFless §3.3): feasible points only.
type INFlessProfile struct {
	Model  string
	Points []INFlessPoint
}

// ReadINFless reads an INFless `<model>-profile-results.txt` file: lines
// `model cpu_threads gpu_sm_pct batch latency_ms`. Infeasible points (9999, or > 10,000 ms) are dropped.
func ReadINFless(r io.Reader) (INFlessProfile, error) {
	var p INFlessProfile
	sc := bufio.NewScanner(io.LimitReader(r, maxProfileBytes))
	line := 0
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 5 {
			return INFlessProfile{}, fmt.Errorf("read infless profile: line %d: %d fields, want 5", line, len(f))
		}
		if p.Model == "" {
			p.Model = f[0]
		} else if f[0] != p.Model {
			return INFlessProfile{}, fmt.Errorf("read infless profile: line %d: model %q, file is for %q", line, f[0], p.Model)
		}
		var n [3]int
		for i := range n {
			v, err := strconv.Atoi(f[i+1])
			if err != nil || v < 0 || v > 1<<20 {
				return INFlessProfile{}, fmt.Errorf("read infless profile: line %d: bad integer %q", line, f[i+1])
			}
			n[i] = v
		}
		ms, err := strconv.ParseFloat(f[4], 64)
		if err != nil || math.IsNaN(ms) || ms < 0 {
			return INFlessProfile{}, fmt.Errorf("read infless profile: line %d: bad latency %q", line, f[4])
		}
		if n[2] == 0 {
			return INFlessProfile{}, fmt.Errorf("read infless profile: line %d: batch must be ≥ 1", line)
		}
		if ms == INFlessInfeasibleMS || ms > 10000 || ms == 0 {
			continue
		}
		p.Points = append(p.Points, INFlessPoint{CPU: n[0], GPU: n[1], Batch: n[2], Latency: msDuration(ms)})
	}
	if err := sc.Err(); err != nil {
		return INFlessProfile{}, fmt.Errorf("read infless profile: %w", err)
	}
	if p.Model == "" {
		return INFlessProfile{}, fmt.Errorf("read infless profile: no data")
	}
	return p, nil
}

// Curve returns the service-time curve on cpu threads and gpu SM percent.
func (p INFlessProfile) Curve(cpu, gpu int) (Curve, error) {
	var ps []Point
	for _, x := range p.Points {
		if x.CPU == cpu && x.GPU == gpu {
			ps = append(ps, Point{Batch: x.Batch, Time: x.Latency})
		}
	}
	if len(ps) == 0 {
		return Curve{}, fmt.Errorf("infless profile %s: no feasible point for cpu %d gpu %d", p.Model, cpu, gpu)
	}
	return NewCurve(ps)
}

// ---------------------------------------------------------------------------------------------
// BATCH service-time polynomials.

// Polynomial is BATCH's service-time regression f(k, m) in seconds for batch size k and Lambda
// memory m MB (BATCH §IV, solver.py): a full bivariate polynomial of degree 3 (TF models) or 4
// (mxnet-resnet50), coefficients t0… in the order of batch-lambda-polynomials.json. The fit is
// valid only inside its domain; At refuses memory outside it and clamps nothing silently.
type Polynomial struct {
	Model string
	// Coef holds t0, t1, … in order.
	Coef []float64
	// MinMemoryMB, MaxMemoryMB and MaxBatch bound the fitted domain.
	MinMemoryMB, MaxMemoryMB, MaxBatch int
}

// monomials lists (power of k, power of m) for t0… t14 in BATCH's order.
var monomials = [...][2]int{{0, 0}, {1, 0}, {0, 1}, {2, 0}, {1, 1}, {0, 2}, {3, 0}, {2, 1}, {1, 2}, {0, 3},
	{4, 0}, {3, 1}, {2, 2}, {1, 3}, {0, 4}}

// Seconds evaluates f(k, m).
func (p Polynomial) Seconds(k, m float64) float64 {
	var s float64
	for i, c := range p.Coef {
		e := monomials[i]
		s += c * math.Pow(k, float64(e[0])) * math.Pow(m, float64(e[1]))
	}
	return s
}

// At implements MemoryCurves: the curve over batch 1…MaxBatch at memoryMB.
func (p Polynomial) At(memoryMB int) (Curve, error) {
	if memoryMB < p.MinMemoryMB || memoryMB > p.MaxMemoryMB {
		return Curve{}, fmt.Errorf("batch polynomial %s: %d MB outside the fitted domain %d–%d MB", p.Model, memoryMB, p.MinMemoryMB, p.MaxMemoryMB)
	}
	ps := make([]Point, 0, p.MaxBatch)
	for k := 1; k <= p.MaxBatch; k++ {
		s := p.Seconds(float64(k), float64(memoryMB))
		if !(s > 0) || s > 1e6 {
			return Curve{}, fmt.Errorf("batch polynomial %s: f(%d, %d) = %v s is not a service time", p.Model, k, memoryMB, s)
		}
		ps = append(ps, Point{Batch: k, Time: durationOf(s * 1e9)})
	}
	return NewCurve(ps)
}

// BATCH's fitted domain (data/README.md: batch 1–20, memory 1280–3008 MB).
const (
	BatchPolyMinMemoryMB = 1280
	BatchPolyMaxMemoryMB = 3008
	BatchPolyMaxBatch    = 20
)

// ReadBatchPolynomials reads batch-lambda-polynomials.json and returns one Polynomial per model.
func ReadBatchPolynomials(r io.Reader) (map[string]Polynomial, error) {
	b, err := readAll(r, "batch polynomials")
	if err != nil {
		return nil, err
	}
	var doc struct {
		Poly struct {
			Coefficients map[string]map[string]float64 `json:"coefficients"`
		} `json:"batch_service_time_polynomial"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("read batch polynomials: %w", err)
	}
	if len(doc.Poly.Coefficients) == 0 {
		return nil, fmt.Errorf("read batch polynomials: no batch_service_time_polynomial.coefficients")
	}
	out := make(map[string]Polynomial, len(doc.Poly.Coefficients))
	for model, cs := range doc.Poly.Coefficients {
		n := len(cs)
		if n == 0 || n > len(monomials) {
			return nil, fmt.Errorf("read batch polynomials: %s: %d coefficients, want 1–%d", model, n, len(monomials))
		}
		coef := make([]float64, n)
		for i := range n {
			v, ok := cs["t"+strconv.Itoa(i)]
			if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("read batch polynomials: %s: missing or bad t%d", model, i)
			}
			coef[i] = v
		}
		out[model] = Polynomial{Model: model, Coef: coef, MinMemoryMB: BatchPolyMinMemoryMB,
			MaxMemoryMB: BatchPolyMaxMemoryMB, MaxBatch: BatchPolyMaxBatch}
	}
	return out, nil
}

// ---------------------------------------------------------------------------------------------
// MLProxy per-batch-size statistics.

// MLProxyRow is one row of MLProxy's batch profile (notebook 04): response-time statistics of a
// batch of BatchSize on a container with CPUm millicores.
type MLProxyRow struct {
	Service   string
	CPUm      int
	BatchSize int
	RAMMB     int
	Avg, P50  time.Duration
	P95, P99  time.Duration
}

// ReadMLProxy reads a batch_profile_*.csv file (header naming at least service_name, cpu_m,
// batch_size, resp_time_avg, resp_time_p50, resp_time_p95, resp_time_p99; milliseconds).
func ReadMLProxy(r io.Reader) ([]MLProxyRow, error) {
	sc := bufio.NewScanner(io.LimitReader(r, maxProfileBytes))
	if !sc.Scan() {
		return nil, fmt.Errorf("read mlproxy profile: empty input")
	}
	col := map[string]int{}
	for i, h := range strings.Split(strings.TrimSpace(sc.Text()), ",") {
		col[strings.TrimSpace(h)] = i
	}
	need := []string{"service_name", "cpu_m", "batch_size", "resp_time_avg", "resp_time_p50", "resp_time_p95", "resp_time_p99"}
	for _, n := range need {
		if _, ok := col[n]; !ok {
			return nil, fmt.Errorf("read mlproxy profile: header lacks column %q", n)
		}
	}
	var rows []MLProxyRow
	line := 1
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		f := strings.Split(text, ",")
		if len(f) != len(col) {
			return nil, fmt.Errorf("read mlproxy profile: line %d: %d fields, want %d", line, len(f), len(col))
		}
		num := func(name string) (float64, error) {
			v, err := strconv.ParseFloat(strings.TrimSpace(f[col[name]]), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1e9 {
				return 0, fmt.Errorf("read mlproxy profile: line %d: bad %s %q", line, name, f[col[name]])
			}
			return v, nil
		}
		var vals [6]float64
		for i, n := range need[1:] {
			v, err := num(n)
			if err != nil {
				return nil, err
			}
			vals[i] = v
		}
		if vals[1] < 1 || vals[1] != math.Trunc(vals[1]) {
			return nil, fmt.Errorf("read mlproxy profile: line %d: batch_size %v must be a positive integer", line, vals[1])
		}
		row := MLProxyRow{Service: f[col["service_name"]], CPUm: int(vals[0]), BatchSize: int(vals[1]),
			Avg: msDuration(vals[2]), P50: msDuration(vals[3]), P95: msDuration(vals[4]), P99: msDuration(vals[5])}
		if i, ok := col["ram_mb"]; ok {
			row.RAMMB, _ = strconv.Atoi(strings.TrimSpace(f[i]))
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mlproxy profile: %w", err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("read mlproxy profile: no rows")
	}
	return rows, nil
}

// MLProxyCurve builds the mean service-time curve of service at cpuM millicores from rows
// (0 = the largest CPU share present). MLProxy measured response times through Knative, so they
// include the platform's overhead, which is what a simulated container should show.
func MLProxyCurve(rows []MLProxyRow, service string, cpuM int) (Curve, error) {
	if cpuM == 0 {
		for _, r := range rows {
			if r.Service == service && r.CPUm > cpuM {
				cpuM = r.CPUm
			}
		}
	}
	var ps []Point
	for _, r := range rows {
		if r.Service == service && r.CPUm == cpuM && r.Avg > 0 {
			ps = append(ps, Point{Batch: r.BatchSize, Time: r.Avg})
		}
	}
	if len(ps) == 0 {
		return Curve{}, fmt.Errorf("mlproxy profile: no rows for %s at %d millicores", service, cpuM)
	}
	return NewCurve(ps)
}

// ---------------------------------------------------------------------------------------------
// InferAll latency tables.

// InferAll holds InferAll's Lambda and VM latency tables (config.py): latency[model][memory or
// VM][batch] in ms, nil = infeasible.
type InferAll struct {
	Batch        []int          `json:"batch_sz"`
	LambdaModels []string       `json:"lambda_models"`
	VMModels     []string       `json:"vm_models"`
	VMMemoryMB   []int          `json:"vm_available_memory_MB"`
	VMPrice      []float64      `json:"vm_cost_usd_per_hour"`
	LambdaMemory []int          `json:"lambda_available_memory_MB"`
	Lambda       [][][]*float64 `json:"lambda_latency_ms"`
	VM           [][][]*float64 `json:"vm_latency_ms"`
	VMSlots      [][][]*float64 `json:"vm_max_slots"`
}

// InferAllVMTypes names InferAll's three VM sizes (4, 8, 16 GB at $0.085, 0.17, 0.34 per hour)
// by the c5 types with those prices.
var InferAllVMTypes = []string{"c5.large", "c5.xlarge", "c5.2xlarge"}

// ReadInferAll reads inferall-lambda-vm-latency.json and checks the tables' shapes.
func ReadInferAll(r io.Reader) (*InferAll, error) {
	b, err := readAll(r, "inferall latency")
	if err != nil {
		return nil, err
	}
	var t InferAll
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("read inferall latency: %w", err)
	}
	check := func(name string, tab [][][]*float64, models []string, inner int) error {
		if len(tab) != len(models) {
			return fmt.Errorf("read inferall latency: %s has %d models, want %d", name, len(tab), len(models))
		}
		for i, m := range tab {
			if len(m) != inner {
				return fmt.Errorf("read inferall latency: %s[%d] has %d rows, want %d", name, i, len(m), inner)
			}
			for j, row := range m {
				if len(row) != len(t.Batch) {
					return fmt.Errorf("read inferall latency: %s[%d][%d] has %d batches, want %d", name, i, j, len(row), len(t.Batch))
				}
			}
		}
		return nil
	}
	for i, b := range t.Batch {
		if b <= 0 || (i > 0 && b <= t.Batch[i-1]) {
			return nil, fmt.Errorf("read inferall latency: batch_sz must be positive and increasing, got %v", t.Batch)
		}
	}
	if len(t.Batch) == 0 {
		return nil, fmt.Errorf("read inferall latency: no batch_sz")
	}
	if err := check("lambda_latency_ms", t.Lambda, t.LambdaModels, len(t.LambdaMemory)); err != nil {
		return nil, err
	}
	if err := check("vm_latency_ms", t.VM, t.VMModels, len(t.VMMemoryMB)); err != nil {
		return nil, err
	}
	if t.VMSlots != nil {
		if err := check("vm_max_slots", t.VMSlots, t.VMModels, len(t.VMMemoryMB)); err != nil {
			return nil, err
		}
	}
	return &t, nil
}

func (t *InferAll) curve(tab [][][]*float64, models []string, model string, j int) (Curve, error) {
	i := indexOf(models, model)
	if i < 0 {
		return Curve{}, fmt.Errorf("inferall: unknown model %q (have %v)", model, models)
	}
	var ps []Point
	for k, v := range tab[i][j] {
		if v != nil && validMS(*v) {
			ps = append(ps, Point{Batch: t.Batch[k], Time: msDuration(*v)})
		}
	}
	if len(ps) == 0 {
		return Curve{}, fmt.Errorf("inferall: %s infeasible there", model)
	}
	return NewCurve(ps)
}

// VMBackend returns model's curve and slots (vm_max_slots at batch 1) on the i-th VM size.
func (t *InferAll) VMBackend(model string, i int) (Backend, error) {
	if i < 0 || i >= len(t.VMMemoryMB) {
		return Backend{}, fmt.Errorf("inferall: no VM size %d", i)
	}
	c, err := t.curve(t.VM, t.VMModels, model, i)
	if err != nil {
		return Backend{}, err
	}
	slots := 1
	if t.VMSlots != nil {
		if v := t.VMSlots[indexOf(t.VMModels, model)][i][0]; v != nil && *v >= 1 && *v < 1e6 {
			slots = int(*v)
		}
	}
	return Backend{Curve: c, Slots: slots}, nil
}

// LambdaTable returns model's serverless curves per measured memory size.
func (t *InferAll) LambdaTable(model string) (MemoryTable, error) {
	out := MemoryTable{}
	for j, mem := range t.LambdaMemory {
		if c, err := t.curve(t.Lambda, t.LambdaModels, model, j); err == nil {
			out[mem] = c
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("inferall: %s has no feasible Lambda size", model)
	}
	return out, nil
}

// Model returns model's full profile from the InferAll tables (VMs named by InferAllVMTypes).
func (t *InferAll) Model(model string) (Model, error) {
	m := Model{Name: model, VM: map[string]Backend{}}
	for i := range t.VMMemoryMB {
		if i >= len(InferAllVMTypes) {
			break
		}
		if b, err := t.VMBackend(model, i); err == nil {
			m.VM[InferAllVMTypes[i]] = b
		}
	}
	if tab, err := t.LambdaTable(model); err == nil {
		m.Serverless = tab
	}
	if len(m.VM) == 0 && m.Serverless == nil {
		return Model{}, fmt.Errorf("inferall: %s is infeasible everywhere", model)
	}
	return m, nil
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

// ---------------------------------------------------------------------------------------------
// MArk capacities.

// MArkCapacity is MArk's measured capacity of one instance type for one model (modules/constants.py):
// requests per minute, with the batch size (HANDLE_SIZE) the type serves.
type MArkCapacity struct {
	Type         string
	PerMinute    float64
	HandleSize   int
	LoadBalancer float64
}

// ReadMArk reads mark-constants.json and returns capacities per model ("tf", "kr", "mx", "nmt").
func ReadMArk(r io.Reader) (map[string][]MArkCapacity, error) {
	b, err := readAll(r, "mark constants")
	if err != nil {
		return nil, err
	}
	var doc struct {
		Batching  map[string]int `json:"batching"`
		Instances map[string]struct {
			Types    []string  `json:"types"`
			Capacity []float64 `json:"capacity_r_per_min"`
			Weights  []float64 `json:"lb_weights"`
		} `json:"instances"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("read mark constants: %w", err)
	}
	if len(doc.Instances) == 0 {
		return nil, fmt.Errorf("read mark constants: no instances")
	}
	handle := func(typ string) int {
		key := map[string]string{"p2.xlarge": "HANDLE_SIZE_P2", "c5.large": "HANDLE_SIZE_C5", "c5.xlarge": "HANDLE_SIZE_C5X",
			"c5.2xlarge": "HANDLE_SIZE_C52X", "c5.4xlarge": "HANDLE_SIZE_C54X"}[typ]
		if v, ok := doc.Batching[key]; ok && v >= 1 && v <= 1<<16 {
			return v
		}
		return 1
	}
	out := map[string][]MArkCapacity{}
	for model, in := range doc.Instances {
		if len(in.Capacity) != len(in.Types) {
			return nil, fmt.Errorf("read mark constants: %s: %d capacities for %d types", model, len(in.Capacity), len(in.Types))
		}
		for i, typ := range in.Types {
			c := in.Capacity[i]
			if !(c > 0) || c > 1e9 {
				return nil, fmt.Errorf("read mark constants: %s %s: bad capacity %v", model, typ, c)
			}
			mc := MArkCapacity{Type: typ, PerMinute: c, HandleSize: handle(typ)}
			if i < len(in.Weights) {
				mc.LoadBalancer = in.Weights[i]
			}
			out[model] = append(out[model], mc)
		}
		sort.Slice(out[model], func(i, j int) bool { return out[model][i].Type < out[model][j].Type })
	}
	return out, nil
}

// Curve turns a capacity into a service-time curve: a batch of HandleSize takes
// HandleSize × 60 s / PerMinute on one slot, proportional to the batch size (MArk §3.2: latency
// grows proportionally with the batch on CPU instances).
func (c MArkCapacity) Curve() Curve {
	t := durationOf(float64(c.HandleSize) * 60e9 / c.PerMinute)
	cv, _ := NewCurve([]Point{{Batch: c.HandleSize, Time: max(t, 1)}})
	return cv
}

// ---------------------------------------------------------------------------------------------
// sloserve worker profiles.

// WorkerProfile is the JSON `sloserve profile --json` writes and the simulator reads:
//
//	{"model": "fmnist-mlp-s", "runtime": "onnxruntime", "instance_type": "local",
//	 "slots": 1, "points": [{"batch": 1, "mean_ms": 0.017, "p50_ms": 0.016, "p95_ms": 0.02, "n": 1000}]}
//
// Only model, points[].batch and one of points[].mean_ms or p50_ms are required.
type WorkerProfile struct {
	Model        string        `json:"model"`
	Runtime      string        `json:"runtime,omitempty"`
	InstanceType string        `json:"instance_type,omitempty"`
	Slots        int           `json:"slots,omitempty"`
	Points       []WorkerPoint `json:"points"`
}

// WorkerPoint is one measured batch size of a WorkerProfile, in milliseconds.
type WorkerPoint struct {
	Batch  int     `json:"batch"`
	MeanMS float64 `json:"mean_ms"`
	P50MS  float64 `json:"p50_ms,omitempty"`
	P95MS  float64 `json:"p95_ms,omitempty"`
	N      int     `json:"n,omitempty"`
}

// ReadWorkerProfile reads a WorkerProfile and checks it.
func ReadWorkerProfile(r io.Reader) (WorkerProfile, error) {
	b, err := readAll(r, "worker profile")
	if err != nil {
		return WorkerProfile{}, err
	}
	var p WorkerProfile
	if err := json.Unmarshal(b, &p); err != nil {
		return WorkerProfile{}, fmt.Errorf("read worker profile: %w", err)
	}
	if p.Model == "" {
		return WorkerProfile{}, fmt.Errorf("read worker profile: model is empty")
	}
	if len(p.Points) == 0 {
		return WorkerProfile{}, fmt.Errorf("read worker profile: no points")
	}
	if p.Slots < 0 {
		return WorkerProfile{}, fmt.Errorf("read worker profile: slots must be ≥ 0, got %d", p.Slots)
	}
	for i, x := range p.Points {
		if x.Batch <= 0 {
			return WorkerProfile{}, fmt.Errorf("read worker profile: points[%d].batch must be > 0, got %d", i, x.Batch)
		}
		if !validMS(x.MeanMS) && !validMS(x.P50MS) {
			return WorkerProfile{}, fmt.Errorf("read worker profile: points[%d] needs a positive mean_ms or p50_ms", i)
		}
	}
	if _, err := p.Backend(); err != nil {
		return WorkerProfile{}, err
	}
	return p, nil
}

// Backend returns the profile's curve (mean, or median where the mean is missing) and slots.
func (p WorkerProfile) Backend() (Backend, error) {
	ps := make([]Point, 0, len(p.Points))
	for _, x := range p.Points {
		ms := x.MeanMS
		if !validMS(ms) {
			ms = x.P50MS
		}
		ps = append(ps, Point{Batch: x.Batch, Time: max(msDuration(ms), 1)})
	}
	c, err := NewCurve(ps)
	if err != nil {
		return Backend{}, fmt.Errorf("read worker profile: %w", err)
	}
	return Backend{Curve: c, Slots: max(p.Slots, 1)}, nil
}
