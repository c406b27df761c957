package repository

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// layout writes files (path → content; a path ending in "/" is a directory) under a new dir.
func layout(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestScan(t *testing.T) {
	tests := []struct {
		name     string
		files    map[string]string
		model    string
		versions []int64
		slo      float64 // config's slo.threshold_ms, 0: not checked
		err      string  // substring of the model's Err; "" means none
	}{
		{name: "one version", files: map[string]string{"m/1/model.onnx": "x"}, model: "m", versions: []int64{1}},
		{name: "versions sorted numerically", files: map[string]string{"m/10/model.onnx": "x", "m/9/model.onnx": "x", "m/2/model.onnx": "x"},
			model: "m", versions: []int64{2, 9, 10}},
		{name: "config", files: map[string]string{"m/1/model.onnx": "x", "m/config.yaml": "slo: {threshold_ms: 50, target: 0.9}\ninstances: 2\n"},
			model: "m", versions: []int64{1}, slo: 50},
		{name: "hidden and plain files skipped", files: map[string]string{"m/1/model.onnx": "x", "m/.git/": "", "m/README": "x", ".trash/1/model.onnx": "x"},
			model: "m", versions: []int64{1}},
		{name: "missing model file", files: map[string]string{"m/1/": ""}, model: "m", err: "m/1/model.onnx: version 1 has no model.onnx"},
		{name: "non-numeric version", files: map[string]string{"m/1/model.onnx": "x", "m/latest/model.onnx": "x"}, model: "m",
			err: `version directory "latest" is not a positive integer`},
		{name: "zero version", files: map[string]string{"m/0/model.onnx": "x"}, model: "m", err: `"0" is not a positive integer`},
		{name: "no versions", files: map[string]string{"m/config.yaml": ""}, model: "m", err: "no version directory"},
		{name: "bad config field", files: map[string]string{"m/1/model.onnx": "x", "m/config.yaml": "slo: {threshold_ms: -1}\n"}, model: "m",
			err: "m/config.yaml: model.slo.threshold_ms: must be > 0, got -1"},
		{name: "unknown config field", files: map[string]string{"m/1/model.onnx": "x", "m/config.yaml": "instance: 2\n"}, model: "m",
			err: "m/config.yaml: yaml: unmarshal errors:\n  line 1: field instance not found"},
		{name: "config names another model", files: map[string]string{"m/1/model.onnx": "x", "m/config.yaml": "name: other\n"}, model: "m",
			err: `m/config.yaml: name: "other" differs from the model's directory "m"`},
		{name: "bad name", files: map[string]string{"a@b/1/model.onnx": "x"}, model: "a@b", err: "is not a valid model name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := layout(t, tt.files)
			ms, err := Scan(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) != 1 || ms[0].Name != tt.model {
				t.Fatalf("Scan found %+v, want the one model %s", ms, tt.model)
			}
			m := ms[0]
			if tt.err != "" {
				if m.Err == nil || !strings.Contains(m.Err.Error(), tt.err) {
					t.Fatalf("Err = %v, want it to contain %q", m.Err, tt.err)
				}
				return
			}
			if m.Err != nil {
				t.Fatalf("Err = %v", m.Err)
			}
			var got []int64
			for _, v := range m.Versions {
				got = append(got, v.Number)
			}
			if !slicesEqual(got, tt.versions) {
				t.Errorf("versions = %v, want %v", got, tt.versions)
			}
			if m.Latest().Number != tt.versions[len(tt.versions)-1] {
				t.Errorf("Latest = %d", m.Latest().Number)
			}
			if tt.slo != 0 && m.Config.SLO.ThresholdMS != tt.slo {
				t.Errorf("slo.threshold_ms = %v, want %v", m.Config.SLO.ThresholdMS, tt.slo)
			}
		})
	}
}

func slicesEqual(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestScanStampAndNotFound(t *testing.T) {
	dir := layout(t, map[string]string{"m/1/model.onnx": "x"})
	a, err := ScanModel(dir, "m")
	if err != nil || a.Err != nil {
		t.Fatal(err, a.Err)
	}
	p := filepath.Join(dir, "m/1/model.onnx")
	if err := os.Chtimes(p, time.Now(), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	b, _ := ScanModel(dir, "m")
	if a.Stamp == b.Stamp {
		t.Errorf("stamp unchanged after the model file changed: %q", a.Stamp)
	}
	for _, name := range []string{"absent", "../m", ""} {
		if _, err := ScanModel(dir, name); err == nil {
			t.Errorf("ScanModel(%q): no error", name)
		}
	}
	if _, err := Scan(filepath.Join(dir, "nope")); err == nil {
		t.Error("Scan of a missing dir: no error")
	}
}
