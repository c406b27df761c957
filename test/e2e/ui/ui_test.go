// Package ui_test drives the live dashboard in headless Chromium: it serves /ui over the
// synthetic Source on 127.0.0.1, loads the page, checks from the DOM that every chart of every
// model was drawn with data, and saves a screenshot to out/ui/dashboard.png. It runs only when
// SLOSERVE_E2E_UI=1 (scripts/ui-test.sh, make e2e-ui), so the default go test ./... needs no
// browser.
package ui_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/dashboard"
)

const token = "e2e-token"

// prefill is the synthetic history in the ring when the page loads, in samples.
const prefill = 300

// kinds are the charts every model must show.
var kinds = []string{"arrival", "instances", "batch", "latency", "attainment", "cost"}

func TestDashboardInChromium(t *testing.T) {
	if os.Getenv("SLOSERVE_E2E_UI") == "" {
		t.Skip("set SLOSERVE_E2E_UI=1 (scripts/ui-test.sh or make e2e-ui) to drive the dashboard in headless Chromium")
	}
	browser := findChromium(t)
	url := serveDashboard(t)

	t.Run("charts render with data", func(t *testing.T) {
		dom := chromium(t, browser, "--dump-dom", url+"#token="+token)
		if !strings.Contains(dom, `data-ready="true"`) {
			t.Fatalf("the page never set data-ready=\"true\"; DOM:\n%s", head(dom))
		}
		charts := chartAttrs(dom)
		for _, m := range dashboard.DefaultSyntheticModels() {
			for _, kind := range kinds {
				attrs, ok := charts[m.Name+"/"+kind]
				if !ok {
					t.Errorf("model %s: no %s chart in the DOM", m.Name, kind)
					continue
				}
				if n, _ := strconv.Atoi(attrs["points"]); n < prefill {
					t.Errorf("model %s, chart %s: data-points = %q, want >= %d", m.Name, kind, attrs["points"], prefill)
				}
			}
		}
		// The SVG renderer puts every drawn series into the DOM: 12 charts with axes, lines and
		// areas make hundreds of paths; an empty chart has a handful.
		if n := strings.Count(dom, "<path"); n < 200 {
			t.Errorf("the DOM holds %d SVG paths, want >= 200 (charts drawn)", n)
		}
		for _, want := range []string{"SLO 200 ms", "target 98.0 %", "live · ", "2 of 2 models"} {
			if !strings.Contains(dom, want) {
				t.Errorf("the page does not show %q", want)
			}
		}
		// The overview table has one row per model with its state.
		for _, m := range dashboard.DefaultSyntheticModels() {
			if !regexp.MustCompile(`<tr class="[a-z]+" data-model="` + regexp.QuoteMeta(m.Name) + `" data-state="(ok|violating|idle)"`).MatchString(dom) {
				t.Errorf("no overview row with a state for model %s", m.Name)
			}
		}
	})

	t.Run("the filter keeps the matching models", func(t *testing.T) {
		models := dashboard.DefaultSyntheticModels()
		keep := models[len(models)-1].Name
		dom := chromium(t, browser, "--dump-dom", url+"?filter="+keep+"#token="+token)
		charts := chartAttrs(dom)
		for _, m := range models {
			_, drawn := charts[m.Name+"/latency"]
			if drawn != (m.Name == keep) {
				t.Errorf("filter %q: model %s drawn = %v", keep, m.Name, drawn)
			}
		}
		if want := fmt.Sprintf("1 of %d models", len(models)); !strings.Contains(dom, want) {
			t.Errorf("filter %q: the page does not show %q", keep, want)
		}
		if !strings.Contains(dom, `data-ready="true"`) {
			t.Errorf("filter %q: the shown model's charts never all had data", keep)
		}
	})

	t.Run("without the token the page asks for it", func(t *testing.T) {
		dom := chromium(t, browser, "--dump-dom", url)
		if !strings.Contains(dom, "This dashboard needs a token") || strings.Contains(dom, `data-ready="true"`) {
			t.Errorf("without a token: want the token notice and no data; DOM:\n%s", head(dom))
		}
	})

	t.Run("screenshot", func(t *testing.T) {
		out := outDir(t)
		file := filepath.Join(out, "dashboard.png")
		_ = os.Remove(file)
		chromium(t, browser, "--screenshot="+file, url+"#token="+token)
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("no screenshot: %v", err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("decode %s: %v", file, err)
		}
		if n := colours(img); n < 50 {
			t.Errorf("%s has %d distinct colours, want >= 50 (a drawn page, not a blank one)", file, n)
		}
		t.Logf("screenshot: %s (%dx%d, %d bytes)", file, img.Bounds().Dx(), img.Bounds().Dy(), len(b))
	})
}

// findChromium returns $CHROMIUM or the first Chromium on PATH.
func findChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium found: apt-get install -y chromium (scripts/ui-test.sh does it) or set CHROMIUM")
	return ""
}

// serveDashboard starts the dashboard over the synthetic Source on 127.0.0.1 with prefill
// samples of history and a live sampling loop, and returns the page's URL.
func serveDashboard(t *testing.T) string {
	t.Helper()
	d, err := dashboard.New(dashboard.NewSynthetic(1), dashboard.Options{Token: token, Title: "sloserve e2e"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	iv := d.Options().Interval
	now := time.Now()
	for i := prefill; i > 0; i-- {
		if err := d.Step(ctx, now.Add(-time.Duration(i)*iv)); err != nil {
			t.Fatal(err)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/ui", d)
	mux.Handle("/ui/", d)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = d.Run(ctx) }()
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		_ = srv.Close()
	})
	return "http://" + ln.Addr().String() + "/ui"
}

// chromium runs one headless Chromium with a fresh profile on url and returns its stdout.
// Virtual time lets the page load, fetch its data and draw without a wall-clock wait.
func chromium(t *testing.T, browser string, action, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--no-first-run", "--no-default-browser-check", "--hide-scrollbars", "--mute-audio",
		"--user-data-dir=" + t.TempDir(), "--window-size=1400,1500", "--virtual-time-budget=5000",
		action, url,
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, browser, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", browser, action, err, stderr.String())
	}
	t.Logf("chromium %s: %v", strings.SplitN(action, "=", 2)[0], time.Since(start).Round(10*time.Millisecond))
	return stdout.String()
}

var (
	chartTag  = regexp.MustCompile(`<div[^>]*\bclass="chart"[^>]*>`)
	dataAttrs = regexp.MustCompile(`\bdata-([a-z-]+)="([^"]*)"`)
)

// chartAttrs returns the data-* attributes of every chart element, by "model/kind".
func chartAttrs(dom string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, tag := range chartTag.FindAllString(dom, -1) {
		attrs := map[string]string{}
		for _, m := range dataAttrs.FindAllStringSubmatch(tag, -1) {
			attrs[m[1]] = m[2]
		}
		out[attrs["model"]+"/"+attrs["chart"]] = attrs
	}
	return out
}

// outDir returns $SLOSERVE_UI_OUT or out/ui at the repository root, created.
func outDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SLOSERVE_UI_OUT")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "out", "ui")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// colours counts the distinct colours of img, sampling every 4th pixel.
func colours(img image.Image) int {
	seen := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 4 {
		for x := b.Min.X; x < b.Max.X; x += 4 {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r, g, bl, a}] = true
		}
	}
	return len(seen)
}

func head(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "…"
	}
	return s
}
