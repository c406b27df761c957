package metrics

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"
)

// WorkersMetricsPath is the gateway's federation endpoint of its workers' metrics: one scrape
// returns every worker's /metrics, each series labelled with worker (the instance id) and
// sloserve_model (the model the gateway serves on it), plus sloserve_worker_up per worker.
// Workers listen on ports the provider picks and that change on restart, so a Prometheus job
// scrapes this one stable path instead of discovering them (docs/observability.md).
const WorkersMetricsPath = "/v2/workers/metrics"

// workerScrapeTimeout bounds the fetch of one worker's metrics.
const workerScrapeTimeout = 2 * time.Second

// WorkerTarget is one instance whose metrics the gateway federates.
type WorkerTarget struct{ Model, ID, Addr string }

// workersGatherer gathers the workers' metrics on each scrape.
type workersGatherer struct {
	targets func() []WorkerTarget
	client  *http.Client
}

var _ prometheus.Gatherer = (*workersGatherer)(nil)

// Gather fetches every worker's /metrics concurrently; a worker that cannot be scraped
// contributes only sloserve_worker_up 0, not an error, so one down worker does not fail the
// whole scrape.
func (w *workersGatherer) Gather() ([]*dto.MetricFamily, error) {
	targets := w.targets()
	fams := make([]map[string]*dto.MetricFamily, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() {
			f, err := w.scrape(t)
			if err == nil {
				fams[i] = f
			}
		})
	}
	wg.Wait()
	up := &dto.MetricFamily{Name: proto.String("sloserve_worker_up"), Type: dto.MetricType_GAUGE.Enum(),
		Help: proto.String("1 when the gateway scraped the worker's /metrics for this federation scrape, else 0.")}
	merged := map[string]*dto.MetricFamily{}
	for i, t := range targets {
		v := 0.0
		if fams[i] != nil {
			v = 1
		}
		up.Metric = append(up.Metric, &dto.Metric{Label: workerLabels(nil, t), Gauge: &dto.Gauge{Value: proto.Float64(v)}})
		for name, mf := range fams[i] {
			for _, m := range mf.Metric {
				m.Label = workerLabels(m.Label, t)
			}
			if have, ok := merged[name]; ok {
				have.Metric = append(have.Metric, mf.Metric...)
			} else {
				merged[name] = mf
			}
		}
	}
	out := make([]*dto.MetricFamily, 0, len(merged)+1)
	out = append(out, up)
	for _, mf := range merged {
		out = append(out, mf)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out, nil
}

// workerLabels adds worker and sloserve_model to a series' labels, sorted by name.
func workerLabels(ls []*dto.LabelPair, t WorkerTarget) []*dto.LabelPair {
	out := make([]*dto.LabelPair, 0, len(ls)+2)
	for _, l := range ls {
		if n := l.GetName(); n != "worker" && n != "sloserve_model" {
			out = append(out, l)
		}
	}
	out = append(out, &dto.LabelPair{Name: proto.String("worker"), Value: proto.String(t.ID)},
		&dto.LabelPair{Name: proto.String("sloserve_model"), Value: proto.String(t.Model)})
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out
}

// scrape fetches and parses one worker's /metrics (text format).
func (w *workersGatherer) scrape(t WorkerTarget) (map[string]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(context.Background(), workerScrapeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.Addr+"/metrics", nil)
	if err != nil {
		return nil, fmt.Errorf("scrape worker %s: %w", t.ID, err)
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := w.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape worker %s: %w", t.ID, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape worker %s: HTTP %d", t.ID, resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scrape worker %s: parse: %w", t.ID, err)
	}
	return fams, nil
}

// WorkersHandler serves WorkersMetricsPath: every scrape federates the /metrics of the
// instances targets returns (the gateway's: every model's, draining ones included).
func WorkersHandler(targets func() []WorkerTarget) http.Handler {
	return promhttp.HandlerFor(&workersGatherer{targets: targets, client: &http.Client{}}, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
