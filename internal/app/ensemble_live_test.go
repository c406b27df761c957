package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/ensemble"
	"github.com/sloserve/sloserve/internal/gateway"
	"github.com/sloserve/sloserve/internal/models"
	"github.com/sloserve/sloserve/internal/models/fashion"
	"github.com/sloserve/sloserve/internal/slo"
	"github.com/sloserve/sloserve/internal/worker/workertest"
	bundled "github.com/sloserve/sloserve/models"
)

// The test binary doubles as a real worker serving bundled models: with
// GATEWAY_BUNDLED_WORKER=1, `<test binary> worker --addr A --models m` loads bundled model m on
// the native runtime and serves it like `sloserve worker`. It runs from init, before TestMain.
func init() {
	if os.Getenv("GATEWAY_BUNDLED_WORKER") == "1" {
		os.Exit(workertest.BundledMain(os.Args[1:]))
	}
}

// bundledWorker is one real worker process serving one bundled model.
type bundledWorker struct {
	model, addr string
	cmd         *exec.Cmd
}

// startBundledWorkers starts one worker process per model, in parallel.
func startBundledWorkers(t *testing.T, names []string) map[string]*bundledWorker {
	t.Helper()
	out := map[string]*bundledWorker{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, len(names))
	for _, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "worker", "--addr", "127.0.0.1:0", "--models", n)
			cmd.Env = append(os.Environ(), "GATEWAY_BUNDLED_WORKER=1")
			cmd.Stderr = os.Stderr
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			stdout, err := cmd.StdoutPipe()
			if err == nil {
				err = cmd.Start()
			}
			if err != nil {
				errs <- err
				return
			}
			line, err := bufio.NewReader(stdout).ReadString('\n')
			addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
			if err != nil || !ok {
				cmd.Process.Kill()
				cmd.Wait()
				errs <- fmt.Errorf("worker %s: %q, %v", n, line, err)
				return
			}
			go io.Copy(io.Discard, stdout)
			mu.Lock()
			out[n] = &bundledWorker{model: n, addr: addr, cmd: cmd}
			mu.Unlock()
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, w := range out {
			w.cmd.Process.Signal(syscall.SIGTERM)
			w.cmd.Wait()
		}
	})
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return out
}

// liveSample is the committed labelled sample with every bundled model's offline predictions.
type liveSample struct {
	x      []float32 // 1000 × 784
	labels []int
	pred   map[string][]int // model -> class per image (in-process native runtime)
	acc    map[string]float64
}

func loadLiveSample(t *testing.T, names []string) liveSample {
	t.Helper()
	set, err := bundled.Sample()
	if err != nil {
		t.Fatal(err)
	}
	n := set.Len()
	s := liveSample{x: set.Floats(nil, 0, n), labels: make([]int, n), pred: map[string][]int{}, acc: map[string]float64{}}
	for i, l := range set.Labels {
		s.labels[i] = int(l)
	}
	for _, name := range names {
		r, _, err := bundled.Open(name, models.Options{Runtime: models.RuntimeNative})
		if err != nil {
			t.Fatal(err)
		}
		out, err := r.Run(context.Background(), []models.Tensor{{Shape: []int64{int64(n), fashion.Pixels}, Data: s.x}})
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		k := len(out[0].Data) / n
		p := make([]int, n)
		right := 0
		for i := range n {
			p[i] = argmax(out[0].Data[i*k : (i+1)*k])
			if p[i] == s.labels[i] {
				right++
			}
		}
		s.pred[name], s.acc[name] = p, float64(right)/float64(n)
	}
	return s
}

// liveRun is the outcome of streaming the sample through one ensemble.
type liveRun struct {
	answers, ok, correct int
	classes              []int // voted class per request, in stream order
	votes                []int // votes counted per request
	maxLatency           time.Duration
}

func (r liveRun) accuracy() float64 { return float64(r.correct) / float64(r.answers) }

// streamLive sends the sample in order through the ensemble over HTTP, one request at a time,
// posting each answer's label as feedback right after it (prequential, as at run time). at(i)
// runs before request i.
func streamLive(t *testing.T, url, ens string, s liveSample, order []int, params string, at func(i int)) liveRun {
	t.Helper()
	var r liveRun
	cl := &http.Client{Timeout: 30 * time.Second}
	for i, img := range order {
		if at != nil {
			at(i)
		}
		var b bytes.Buffer
		fmt.Fprintf(&b, `{"id":"%s-%d","parameters":{%s},"inputs":[{"name":"input","datatype":"FP32","shape":[1,784],"data":[`, ens, i, params)
		for j, v := range s.x[img*fashion.Pixels : (img+1)*fashion.Pixels] {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatFloat(float64(v), 'g', -1, 32))
		}
		b.WriteString("]}]}")
		start := time.Now()
		resp, err := cl.Post(url+"/v2/models/"+ens+"/infer", "application/json", &b)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		r.maxLatency = max(r.maxLatency, time.Since(start))
		r.answers++
		if resp.StatusCode != http.StatusOK {
			t.Errorf("request %d: %d %s", i, resp.StatusCode, body)
			r.classes, r.votes = append(r.classes, -1), append(r.votes, 0)
			continue
		}
		var ans struct {
			ID         string         `json:"id"`
			Parameters map[string]any `json:"parameters"`
			Outputs    []struct {
				Data []float64 `json:"data"`
			} `json:"outputs"`
		}
		if err := json.Unmarshal(body, &ans); err != nil || len(ans.Outputs) != 1 {
			t.Fatalf("request %d: %s: %v", i, body, err)
		}
		r.ok++
		cls, _ := strconv.Atoi(fmt.Sprint(ans.Parameters[gateway.ParamEnsembleClasses]))
		votes, _ := strconv.Atoi(fmt.Sprint(ans.Parameters[gateway.ParamEnsembleVotes]))
		r.classes, r.votes = append(r.classes, cls), append(r.votes, votes)
		if cls == s.labels[img] {
			r.correct++
		}
		fb, err := cl.Post(url+"/v2/models/"+ens+"/feedback", "application/json",
			strings.NewReader(fmt.Sprintf(`{"id":%q,"label":%d}`, ans.ID, s.labels[img])))
		if err != nil {
			t.Fatal(err)
		}
		fbb, _ := io.ReadAll(fb.Body)
		fb.Body.Close()
		if fb.StatusCode != http.StatusOK || !bytes.Contains(fbb, []byte(`"learned":1`)) {
			t.Fatalf("feedback %d: %d %s", i, fb.StatusCode, fbb)
		}
	}
	return r
}

// replayWeighted is the offline reference: class-weighted voting of members (most accurate
// first) over the same stream with the same prequential feedback.
func replayWeighted(s liveSample, members []ensemble.Model, order []int) []int {
	w := ensemble.NewClassWeights(ensemble.Precision, 0)
	ordered := ensemble.Candidates(members, ensemble.Constraint{Latency: time.Hour, Accuracy: 1}, 0)
	for _, m := range ordered {
		w.SetPrior(m.Name, m.Accuracy)
	}
	out := make([]int, len(order))
	for i, img := range order {
		preds := make([]ensemble.Prediction, len(ordered))
		for j, m := range ordered {
			preds[j] = ensemble.Prediction{Model: m.Name, Class: s.pred[m.Name][img]}
		}
		out[i] = w.Weighted(preds).Class
		w.Learn(preds, s.labels[img])
	}
	return out
}

// virtualClock advances by step each time it is read after tick (one request = one tick).
type virtualClock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

func (c *virtualClock) tick() {
	c.mu.Lock()
	c.now = c.now.Add(c.step)
	c.mu.Unlock()
}

func (c *virtualClock) read() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// TestEnsembleLiveBundled serves the seven bundled Fashion-MNIST models from seven real worker
// processes and streams the committed 1,000-image sample through live ensembles over HTTP:
// the full ensemble's answers equal the offline class-weighted replay; dynamic selection asks
// fewer members; with one of five members' workers killed mid-stream (20 % of the instances)
// every request gets exactly one answer and accuracy drops by at most one point.
func TestEnsembleLiveBundled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts seven worker processes")
	}
	man, err := bundled.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	names := man.Names()
	workers := startBundledWorkers(t, names)
	s := loadLiveSample(t, names)

	g, err := gateway.New(gateway.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(context.Background())
	ctx := context.Background()
	profile := map[string]ensemble.Model{}
	for _, n := range names {
		if err := g.AddModel(gateway.Model{Name: n, SLO: slo.Spec{Threshold: 2 * time.Second, Target: 0.98}, Policy: &fixedPolicy{Max: 8, Wait: time.Millisecond}}); err != nil {
			t.Fatal(err)
		}
		if err := g.AddInstance(ctx, n, gateway.Instance{ID: n + "-0", Addr: workers[n].addr}); err != nil {
			t.Fatal(err)
		}
		mi, _ := man.Model(n)
		profile[n] = ensemble.Model{Name: n, Latency: time.Millisecond, Accuracy: mi.Accuracy, PackingFactor: 1}
	}
	pick := func(ns ...string) []ensemble.Model {
		var out []ensemble.Model
		for _, n := range ns {
			out = append(out, profile[n])
		}
		return out
	}
	clock := &virtualClock{now: time.Unix(0, 0), step: 20 * time.Millisecond} // 50 req/s (Cocktail §5.2)
	cfg := ensemble.DefaultConfig()
	cfg.Interval = 2 * time.Second // 100 requests per interval on the virtual clock
	add := func(name, sel string, members []ensemble.Model) {
		t.Helper()
		err := g.AddEnsemble(gateway.Ensemble{Name: name, Members: members, Default: ensemble.Constraint{Latency: 2 * time.Second, Accuracy: 0.88},
			Selection: sel, Voting: config.VotingWeighted, Config: cfg, Clock: clock.read})
		if err != nil {
			t.Fatal(err)
		}
	}
	five := []string{"pool-mlp64", "mlp32", "mlp128", "mlp256", "branch2"}
	add("full", config.SelectionFull, pick(names...))
	add("dynamic", config.SelectionDynamic, pick(names...))
	add("five", config.SelectionFull, pick(five...))
	add("five-chaos", config.SelectionFull, pick(five...))
	h, err := g.Handler(gateway.HandlerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	order := rand.New(rand.NewPCG(1, 2)).Perm(len(s.labels))
	best, bestAcc := "", 0.0
	for _, n := range names {
		if s.acc[n] > bestAcc {
			best, bestAcc = n, s.acc[n]
		}
	}
	mean := func(ns []string) float64 {
		sum := 0.0
		for _, n := range ns {
			sum += s.acc[n]
		}
		return sum / float64(len(ns))
	}
	params := `"latency_ms":2000,"accuracy":0.88`

	full := streamLive(t, srv.URL, "full", s, order, params, func(int) { clock.tick() })
	want := replayWeighted(s, pick(names...), order)
	mismatch := 0
	for i := range want {
		if full.classes[i] != want[i] || full.votes[i] != len(names) {
			mismatch++
		}
	}
	if mismatch != 0 {
		t.Errorf("full ensemble: %d of %d answers differ from the offline class-weighted replay (or lack a vote)", mismatch, len(want))
	}
	if full.accuracy() < mean(names) {
		t.Errorf("full ensemble accuracy %.4f below its members' mean %.4f", full.accuracy(), mean(names))
	}
	fs, _ := g.EnsembleStats("full")

	dyn := streamLive(t, srv.URL, "dynamic", s, order, params, func(int) { clock.tick() })
	ds, _ := g.EnsembleStats("dynamic")
	if ds.MeanMembers() >= fs.MeanMembers() {
		t.Errorf("dynamic selection asked %.2f members per request, full %.2f: want fewer", ds.MeanMembers(), fs.MeanMembers())
	}
	if dyn.ok != len(order) {
		t.Errorf("dynamic: %d of %d answered", dyn.ok, len(order))
	}

	base := streamLive(t, srv.URL, "five", s, order, params, nil)
	victim := "mlp128"
	chaos := streamLive(t, srv.URL, "five-chaos", s, order, params, func(i int) {
		if i == len(order)/5 { // kill one worker of five after 200 requests
			workers[victim].cmd.Process.Kill()
		}
	})
	cs, _ := g.EnsembleStats("five-chaos")
	if chaos.answers != len(order) || chaos.ok != len(order) {
		t.Errorf("chaos: %d answers, %d ok for %d requests; want exactly one 200 answer each", chaos.answers, chaos.ok, len(order))
	}
	if drop := base.accuracy() - chaos.accuracy(); drop > 0.01 {
		t.Errorf("killing %s's worker cost %.2f points (%.4f → %.4f), want ≤ 1", victim, 100*drop, base.accuracy(), chaos.accuracy())
	}
	t.Logf("best single model %s %.4f; members' mean %.4f", best, bestAcc, mean(names))
	t.Logf("full (7, weighted): accuracy %.4f, %.2f members/request, max latency %v", full.accuracy(), fs.MeanMembers(), full.maxLatency)
	t.Logf("dynamic (target 0.88): accuracy %.4f, %.2f members/request (%.0f%% fewer), selection %v, max latency %v",
		dyn.accuracy(), ds.MeanMembers(), 100*(1-ds.MeanMembers()/fs.MeanMembers()), ds.Selections, dyn.maxLatency)
	t.Logf("five (%v): accuracy %.4f; with %s's worker killed after %d requests: %.4f (%d/%d answered, %d member errors, %.2f members/request), max latency %v",
		five, base.accuracy(), victim, len(order)/5, chaos.accuracy(), chaos.ok, chaos.answers, cs.MemberErrors, cs.MeanMembers(), chaos.maxLatency)
	t.Logf("importance weights (dynamic): %v", ds.Importance)
}

// TestServeEnsembleExample starts examples/serve-ensemble.yaml as `sloserve serve` does (real
// worker processes for the seven bundled models) and asks both ensembles to classify one image
// of the sample, then gives the label back.
func TestServeEnsembleExample(t *testing.T) {
	if testing.Short() {
		t.Skip("starts seven worker processes")
	}
	cfg, err := config.Load("../../examples/serve-ensemble.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Gateway.Addr = "127.0.0.1:0"
	cfg.Workers.Binary = os.Args[0]
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := Start(ctx, cfg, StackOptions{Env: []string{"GATEWAY_BUNDLED_WORKER=1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	if d := diff([]string{"fashion", "fashion-fast"}, st.Gateway.EnsembleNames()); d != "" {
		t.Fatalf("ensembles (-want +got):\n%s", d)
	}
	set, err := bundled.Sample()
	if err != nil {
		t.Fatal(err)
	}
	img := set.Floats(nil, 0, 1)
	for _, tt := range []struct {
		ens   string
		votes float64
	}{{"fashion", 7}, {"fashion-fast", 4}} {
		data, _ := json.Marshal(img)
		body := fmt.Sprintf(`{"id":"img0","parameters":{"latency_ms":5000,"accuracy":0.88},"inputs":[{"name":"input","datatype":"FP32","shape":[1,784],"data":%s}]}`, data)
		resp, err := http.Post(st.URL+"/v2/models/"+tt.ens+"/infer", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var ans struct {
			Parameters map[string]any `json:"parameters"`
		}
		json.NewDecoder(resp.Body).Decode(&ans)
		resp.Body.Close()
		got := []any{resp.StatusCode, ans.Parameters[gateway.ParamEnsembleClasses], ans.Parameters[gateway.ParamEnsembleVotes]}
		if d := diff([]any{200, strconv.Itoa(int(set.Labels[0])), tt.votes}, got); d != "" {
			t.Errorf("%s: status, class, votes (-want +got):\n%s", tt.ens, d)
		}
		fb, err := http.Post(st.URL+"/v2/models/"+tt.ens+"/feedback", "application/json", strings.NewReader(fmt.Sprintf(`{"id":"img0","label":%d}`, set.Labels[0])))
		if err != nil {
			t.Fatal(err)
		}
		fbb, _ := io.ReadAll(fb.Body)
		fb.Body.Close()
		if !bytes.Contains(fbb, []byte(`"learned":1`)) {
			t.Errorf("%s feedback: %d %s", tt.ens, fb.StatusCode, fbb)
		}
	}
}
