package report

import (
	"bytes"
	"flag"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/slo"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

func TestLoad(t *testing.T) {
	run, err := Load("testdata/run")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"sloserve", "mark", "sagemaker"}; !reflect.DeepEqual(want, run.Policies) {
		t.Errorf("Policies (-want +got)\n-%v\n+%v", want, run.Policies)
	}
	s := run.Series["mark"]
	if s == nil || len(s.Points) != 24 {
		t.Fatalf("mark series = %+v, want 24 points", s)
	}
	if want := []string{"c5.large", "p2.xlarge"}; !reflect.DeepEqual(want, s.Types) {
		t.Errorf("Types (-want +got)\n-%v\n+%v", want, s.Types)
	}
	if p := s.Points[12]; p.T != 3900 || p.Instances[1] != 1 || math.IsNaN(p.MeanBatchSize) {
		t.Errorf("mark point 12 = %+v, want t 3900, one p2.xlarge, a batch size", p)
	}
	if p := run.Series["sagemaker"].Points[0]; !math.IsNaN(p.MeanBatchSize) {
		t.Errorf("sagemaker batch size = %v, want NaN (no batches)", p.MeanBatchSize)
	}
	if len(run.CCDF["sloserve"]) != 40 || len(run.CCDF["mark"]) != 40 || run.CCDF["sagemaker"] != nil {
		t.Errorf("CCDF lengths sloserve %d, mark %d, sagemaker %d; want 40, 40, 0", len(run.CCDF["sloserve"]), len(run.CCDF["mark"]), len(run.CCDF["sagemaker"]))
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"no summaries", map[string]string{}, "summaries.json"},
		{"duplicate policy", map[string]string{SummariesFile: `[{"policy":"a"},{"policy":"a"}]`}, "appears twice"},
		{"series twice", map[string]string{SummariesFile: `[{"policy":"a"}]`, SeriesFile: "policy,t_s\na,1\n", "a.series.csv": "t_s\n1\n"}, "two files"},
		{"bad ccdf", map[string]string{SummariesFile: `[{"policy":"a"}]`, "a.ccdf.csv": "latency_ms,exceeded\n1,2\n"}, "a.ccdf.csv"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	tests := []struct {
		name, kind, in, want string
	}{
		{"summaries not JSON", "summaries", "nope", "want a JSON array"},
		{"summary without policy", "summaries", `[{"trace":"x"}]`, "missing policy"},
		{"summary wrong type", "summaries", `{"policy": 3}`, "summaries"},
		{"series no t_s", "series", "policy,arrival_rps\na,1\n", `"t_s"`},
		{"series no policy", "series-nodefault", "t_s\n1\n", `"policy"`},
		{"series not a number", "series", "policy,t_s,p95_ms\na,1,fast\n", `"p95_ms"`},
		{"series infinite", "series", "policy,t_s\na,+Inf\n", "finite"},
		{"series NaN outside batch", "series", "policy,t_s,p50_ms\na,1,NaN\n", "finite"},
		{"series time goes back", "series", "policy,t_s\na,5\na,4\n", "goes back"},
		{"series ragged", "series", "policy,t_s\na,1,2\n", "wrong number of fields"},
		{"ccdf columns", "ccdf", "policy,latency\na,1\n", "latency_ms"},
		{"ccdf fraction", "ccdf", "policy,latency_ms,exceeded\na,1,1.5\n", "[0, 1]"},
		{"ccdf increasing", "ccdf", "policy,latency_ms,exceeded\na,1,0.5\na,2,0.6\n", "must not increase"},
		{"ccdf empty policy", "ccdf", "policy,latency_ms,exceeded\n,1,0.5\n", "empty policy"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			r := strings.NewReader(tc.in)
			switch tc.kind {
			case "summaries":
				_, err = ReadSummaries(r)
			case "series":
				_, err = ReadSeriesCSV(r, "")
			case "series-nodefault":
				_, err = ReadSeriesCSV(r, "")
			case "ccdf":
				_, err = ReadCCDFCSV(r, "")
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

// TestRenderGolden renders testdata/run and compares the SVG figures and the HTML page with
// testdata/golden (run with -update to rewrite them). PNG bytes depend on font rasterisation,
// so PNGs are only decoded and measured.
func TestRenderGolden(t *testing.T) {
	run, err := Load("testdata/run")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	files, err := Render(run, out, Options{Source: "testdata/run"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	want := []string{"latency-ccdf.svg", "latency-ccdf.png", "cost-by-tier.svg", "cost-by-tier.png", "fleet.svg", "fleet.png",
		"batch-size.svg", "batch-size.png", "latency-p95.svg", "latency-p95.png", "report.html"}
	if !reflect.DeepEqual(want, names) {
		t.Fatalf("files (-want +got)\n-%v\n+%v", want, names)
	}
	for _, name := range names {
		got, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".png") {
			img, err := png.Decode(bytes.NewReader(got))
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if b := img.Bounds(); b.Dx() != 768 || b.Dy() != 480 {
				t.Errorf("%s: %dx%d pixels, want 768x480 (8x5 in at 96 dpi)", name, b.Dx(), b.Dy())
			}
			continue
		}
		golden := filepath.Join("testdata", "golden", name)
		if *update {
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		wantB, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run go test -update to create it)", err)
		}
		if !bytes.Equal(wantB, got) {
			t.Errorf("%s differs from %s (-want +got):\n%s\n(run go test ./internal/report -update if the change is intended)", name, golden, firstDiff(string(wantB), string(got)))
		}
	}
	page, _ := os.ReadFile(filepath.Join(out, HTMLFile))
	self := strings.NewReplacer(`xmlns="http://www.w3.org/2000/svg"`, "", `xmlns:xlink="http://www.w3.org/1999/xlink"`, "").Replace(string(page))
	for _, s := range []string{"src=", "href=", "<link", "<script", "http:", "https:"} {
		if strings.Contains(self, s) {
			t.Errorf("report.html contains %q; it must be self-contained", s)
		}
	}
	if n := strings.Count(string(page), "<svg"); n != 5 {
		t.Errorf("report.html inlines %d SVGs, want 5", n)
	}
}

// firstDiff shows the first differing line of two texts.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return "line " + strconv.Itoa(i+1) + ":\n-" + x + "\n+" + y
		}
	}
	return "(equal lines; lengths differ)"
}

func TestRenderSummariesOnly(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, SummariesFile), []byte(`{"policy":"only","completed":10,"slo":{"threshold_ms":100,"target":0.95},"latency_ms":{"p50":10,"p95":50,"p99":90},"cost_usd":{"total":1,"vm":1}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	run, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Render(run, filepath.Join(dir, "out"), Options{}); err != nil {
		t.Fatalf("Render with summaries only: %v", err)
	}
}

func TestWriteCCDFCSVRoundTrip(t *testing.T) {
	var h slo.Histogram
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Millisecond)
	}
	var buf bytes.Buffer
	if err := WriteCCDFCSV(&buf, "a", h.CCDF(), true); err != nil {
		t.Fatal(err)
	}
	if err := WriteCCDFCSV(&buf, "b", h.CCDF()[:3], false); err != nil {
		t.Fatal(err)
	}
	got, err := ReadCCDFCSV(&buf, "")
	if err != nil {
		t.Fatalf("ReadCCDFCSV(WriteCCDFCSV(...)): %v", err)
	}
	if len(got["a"]) != len(h.CCDF()) || len(got["b"]) != 3 {
		t.Errorf("read %d and %d points, want %d and 3", len(got["a"]), len(got["b"]), len(h.CCDF()))
	}
	if last := got["a"][len(got["a"])-1]; last.Exceeded != 0 || last.LatencyMS < 999 {
		t.Errorf("last point = %+v, want exceeded 0 at ~1000 ms", last)
	}
}
