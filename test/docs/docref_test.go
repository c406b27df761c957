package docs

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite docs/config.md from the configuration structs")

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestConfigDocUpToDate checks that docs/config.md is what the generator writes today.
func TestConfigDocUpToDate(t *testing.T) {
	root := repoRoot(t)
	want, err := Render(root)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, ConfigDoc)
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(want, "\n")
		for i := 0; i < max(len(gl), len(wl)); i++ {
			g, w := "", ""
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("%s is out of date (run go run ./test/docs/gen); first difference at line %d:\n-want %s\n+got  %s", ConfigDoc, i+1, w, g)
			}
		}
	}
}

// TestConfigDocCoversEveryField checks that every yaml field of every configuration struct is
// named in docs/config.md with a description.
func TestConfigDocCoversEveryField(t *testing.T) {
	root := repoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, ConfigDoc))
	if err != nil {
		t.Fatal(err)
	}
	secs, err := Sections()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secs {
		t.Run(s.Title, func(t *testing.T) {
			rows, err := Rows(root, s)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				if !strings.Contains(string(doc), "| `"+r.Path+"` |") {
					t.Errorf("field %s is missing from %s", r.Path, ConfigDoc)
				}
				if r.Doc == "" {
					t.Errorf("field %s has no doc comment in its struct", r.Path)
				}
			}
		})
	}
}

// TestSectionsHaveFields guards the reflection: the main files have their known fields.
func TestSectionsHaveFields(t *testing.T) {
	root := repoRoot(t)
	secs, err := Sections()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"serve":   {"gateway.addr", "models[].slo.threshold_ms", "models[].batching.mlproxy.latency_guard", "workers.runtime"},
		"sim":     {"slo.threshold", "model.mlproxy.cpu_m", "policies"},
		"catalog": {"types[].launch_delay.median", "serverless.cold_start.median", "spot.interruptions_per_hour"},
		"mark":    {"policies.mark.slo_monitor.window", "policies.mark.forecaster"},
	}
	got := map[string]map[string]bool{}
	for i, s := range secs {
		key := map[int]string{0: "serve", 1: "sim", 2: "catalog"}[i]
		if s.Prefix == "policies.mark" {
			key = "mark"
		}
		if key == "" {
			continue
		}
		rows, err := Rows(root, s)
		if err != nil {
			t.Fatal(err)
		}
		got[key] = map[string]bool{}
		for _, r := range rows {
			got[key][r.Path] = true
		}
	}
	for key, paths := range want {
		for _, p := range paths {
			if !got[key][p] {
				t.Errorf("section %s: field %s not found by the reflection walk", key, p)
			}
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for _, tc := range []struct{ in, want string }{{"500ms", "500ms"}, {"1m", "1m"}, {"1h", "1h"}, {"90s", "1m30s"}, {"0s", "0s"}} {
		t.Run(tc.in, func(t *testing.T) {
			d, err := time.ParseDuration(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := formatDuration(d); got != tc.want {
				t.Errorf("formatDuration(%s) (-want +got):\n-%s\n+%s", tc.in, tc.want, got)
			}
		})
	}
}
