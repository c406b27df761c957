package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestSimSettingUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"unknown setting", []string{"--setting", "clipper"}},
		{"setting with scoreboard", []string{"--setting", "infless", "--scoreboard"}},
		{"setting with config", []string{"--setting", "cocktail", "--config", "x.yaml"}},
		{"servers without setting", []string{"--trace", "x.csv", "--servers", "8"}},
		{"negative servers", []string{"--setting", "infless", "--servers", "-1"}},
		{"infless with two traces", []string{"--setting", "infless", "--trace", "a.csv,b.csv"}},
		{"infless with mean rps", []string{"--setting", "infless", "--mean-rps", "50"}},
		{"infless unknown policy", []string{"--setting", "infless", "--policy", "mark", "--data", "testdata/does-not-exist"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := runSim(context.Background(), tc.args, env{stdout: &out, stderr: &errOut})
			var ue *usageError
			if !errors.As(err, &ue) {
				t.Errorf("%v: error = %v, want a usage error", tc.args, err)
			}
		})
	}
}

// TestSimSettings runs both settings briefly through `sloserve sim --setting` and checks that
// every named policy comes back as a Summary. Without ../shared/data it runs on the committed
// fixture (testdata/fixture: made-up profiles and traces of the same layout).
func TestSimSettings(t *testing.T) {
	data := filepath.Join("..", "..", "..", "shared", "data")
	if _, err := os.Stat(filepath.Join(data, "profiles", "infless")); err != nil {
		t.Logf("shared data absent (%v): running on testdata/fixture", err)
		data = filepath.Join("..", "..", "testdata", "fixture")
	}
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--setting", "infless", "--duration", "1m", "--max-rps", "100", "--servers", "64"}, []string{"sloserve", "infless"}},
		{[]string{"--setting", "infless", "--duration", "1m", "--policy", "uniform,openfaas+"}, []string{"uniform", "openfaas+"}},
		{[]string{"--setting", "cocktail", "--duration", "2m"}, []string{"sloserve", "cocktail"}},
	}
	for _, tc := range tests {
		var out, errOut bytes.Buffer
		args := append([]string{"--data", data, "--json"}, tc.args...)
		if err := runSim(context.Background(), args, env{stdout: &out, stderr: &errOut}); err != nil {
			t.Fatalf("sim %v: %v\n%s", args, err, errOut.String())
		}
		var sums []struct {
			Policy      string `json:"policy"`
			Requests    int64  `json:"requests"`
			PerFunction []struct {
				Function      string  `json:"function"`
				Requests      int64   `json:"requests"`
				SLOAttainment float64 `json:"slo_attainment"`
			} `json:"per_function"`
		}
		if err := json.Unmarshal(out.Bytes(), &sums); err != nil {
			t.Fatalf("sim %v: %v\n%s", args, err, out.String())
		}
		if len(sums) != len(tc.want) {
			t.Fatalf("sim %v: %d summaries, want %v", args, len(sums), tc.want)
		}
		for i, s := range sums {
			if s.Policy != tc.want[i] || s.Requests == 0 {
				t.Errorf("sim %v: summary %d is %q with %d requests, want %q with some", args, i, s.Policy, s.Requests, tc.want[i])
			}
			if tc.args[1] != "infless" {
				continue
			}
			// Per function (issue #18 item 10): one entry per OSVT + Q&A function, summing to the aggregate.
			var n int64
			for _, f := range s.PerFunction {
				n += f.Requests
			}
			if len(s.PerFunction) != 5 || s.PerFunction[0].Function != "ssd" || n != s.Requests {
				t.Errorf("sim %v: %s per_function %+v: want the 5 OSVT + Q&A functions summing to %d requests", args, s.Policy, s.PerFunction, s.Requests)
			}
		}
	}
}
