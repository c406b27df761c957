package observability

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"

	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/gateway"
	"github.com/sloserve/sloserve/internal/slo"
)

const dir = "../../deploy/observability"

// promtool returns promtool's path, or skips the test saying how to install it.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not found on PATH: install it with 'make promtool' (scripts/setup.sh promtool, Debian's prometheus package) to check deploy/observability")
	}
	return p
}

func TestPromtoolCheckRules(t *testing.T) {
	p := promtool(t)
	for _, args := range [][]string{
		{"check", "rules", "sloserve-rules.yaml"},
		{"test", "rules", "sloserve-rules.test.yaml"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			cmd := exec.Command(p, args...)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		})
	}
}

// TestPrometheusRuleMatches checks that the prometheus-operator PrometheusRule holds the same
// groups as the plain rules file promtool checks.
func TestPrometheusRuleMatches(t *testing.T) {
	var plain struct {
		Groups any `yaml:"groups"`
	}
	var crd struct {
		Kind string `yaml:"kind"`
		Spec struct {
			Groups any `yaml:"groups"`
		} `yaml:"spec"`
	}
	readYAML(t, "sloserve-rules.yaml", &plain)
	readYAML(t, "prometheusrule.yaml", &crd)
	if crd.Kind != "PrometheusRule" || plain.Groups == nil || !reflect.DeepEqual(plain.Groups, crd.Spec.Groups) {
		t.Errorf("prometheusrule.yaml (kind %q) does not hold the groups of sloserve-rules.yaml", crd.Kind)
	}
}

func readYAML(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// exported returns the names of the metric families a gateway serving one model exports, and
// those the workers export (read from internal/worker/metrics.go) plus the federation's.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := gateway.RegisterRuntimeMetrics(reg, gateway.BuildInfo{Version: "v0", Commit: "c"}); err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(gateway.Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(context.Background())
	pol, err := batching.Builtin().New(batching.Config{Policy: batching.PolicyNone, SLO: slo.DefaultSpec().Threshold, MaxBatch: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.AddModel(gateway.Model{Name: "m", SLO: slo.DefaultSpec(), Policy: pol}); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{"sloserve_worker_up": true}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	src, err := os.ReadFile("../../internal/worker/metrics.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`Name:\s+"(sloserve_worker_\w+)"`).FindAllSubmatch(src, -1) {
		names[string(m[1])] = true
	}
	return names
}

var metricRef = regexp.MustCompile(`\b((?:sloserve|go|process)_[a-z0-9_]+)`)

// used returns the metric names referenced in exprs (histogram suffixes removed).
func used(exprs []string) []string {
	seen := map[string]bool{}
	for _, e := range exprs {
		for _, m := range metricRef.FindAllString(e, -1) {
			if m == "sloserve_model" { // a label of the federated worker series, not a metric
				continue
			}
			for _, suf := range []string{"_bucket", "_count", "_sum"} {
				m = strings.TrimSuffix(m, suf)
			}
			seen[m] = true
		}
	}
	out := make([]string, 0, len(seen))
	for m := range seen {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// TestReferencedMetricsExist checks that every metric the rules and the dashboard query is one
// the gateway or its workers export, so a rename cannot silently empty a panel or an alert.
func TestReferencedMetricsExist(t *testing.T) {
	have := exported(t)
	var rules struct {
		Groups []struct {
			Rules []struct {
				Expr string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	readYAML(t, "sloserve-rules.yaml", &rules)
	var exprs []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	if len(dash.Panels) == 0 {
		t.Fatal("grafana-dashboard.json has no panels")
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	refs := used(exprs)
	if len(refs) < 10 {
		t.Fatalf("only %d metric names found in the rules and dashboard: %v", len(refs), refs)
	}
	for _, m := range refs {
		if !have[m] {
			t.Errorf("%s is queried by deploy/observability but not exported", m)
		}
	}
}
