package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const forecastFixture = "../../internal/forecast/testdata/twitter-20min.rps.csv"

func TestForecastUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"no subcommand", []string{"forecast"}},
		{"unknown subcommand", []string{"forecast", "predict"}},
		{"no trace", []string{"forecast", "backtest"}},
		{"unknown method", []string{"forecast", "backtest", "--trace", forecastFixture, "--methods", "prophet"}},
		{"empty methods", []string{"forecast", "backtest", "--trace", forecastFixture, "--methods", ","}},
		{"zero horizon", []string{"forecast", "backtest", "--trace", forecastFixture, "--horizon", "0"}},
		{"bad unit", []string{"forecast", "backtest", "--trace", forecastFixture, "--unit", "7s"}},
		{"bad season", []string{"forecast", "backtest", "--trace", forecastFixture, "--season", "1"}},
		{"unknown flag", []string{"forecast", "backtest", "--trace", forecastFixture, "--nope"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(context.Background(), tc.args, nil, &out, &errOut)
			var ue *usageError
			if !errors.As(err, &ue) {
				t.Errorf("run(%v) error = %v, want a usage error (exit status 2)", tc.args, err)
			}
		})
	}
}

func TestForecastBacktestJSON(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"forecast", "backtest", "--trace", forecastFixture, "--warmup", "8", "--horizon", "5",
		"--stride", "2", "--train-steps", "5", "--train-steps-per-origin", "1", "--json"}
	if err := run(context.Background(), args, nil, &out, &errOut); err != nil {
		t.Fatalf("run(%v): %v", args, err)
	}
	var got backtestReport
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out.String())
	}
	if got.Units != 20 || len(got.Scores) != 5 || got.Best == "" {
		t.Errorf("report: units %d, %d scores, best %q; want 20 units, 5 scores, a best method", got.Units, len(got.Scores), got.Best)
	}
	for _, s := range got.Scores {
		if s.Method == "ewma" && s.RMSERatio != 1 {
			t.Errorf("ewma ratio = %v, want 1", s.RMSERatio)
		}
	}
}

func TestForecastBacktestTable(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"forecast", "backtest", "--trace", forecastFixture, "--warmup", "8", "--horizon", "5", "--methods", "naive,ewma"}
	if err := run(context.Background(), args, nil, &out, &errOut); err != nil {
		t.Fatalf("run(%v): %v", args, err)
	}
	for _, want := range []string{"RMSE/EWMA", "naive", "ewma", "best:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

// TestForecastTrainThenBacktest: 'forecast train' writes a model that 'forecast backtest
// --model' loads: the LSTM then runs no initial training (--train-steps defaults to 0) and
// scores a forecast from the pre-trained net.
func TestForecastTrainThenBacktest(t *testing.T) {
	model := filepath.Join(t.TempDir(), "model.json")
	var out, errOut bytes.Buffer
	args := []string{"forecast", "train", "--trace", forecastFixture, "--out", model, "--horizon", "5", "--lags", "4", "--hidden", "4", "--steps", "20", "--units", "15"}
	if err := run(context.Background(), args, nil, &out, &errOut); err != nil {
		t.Fatalf("run(%v): %v", args, err)
	}
	if !strings.Contains(out.String(), "15 units") || !strings.Contains(out.String(), "20 steps") {
		t.Errorf("train output %q lacks the step count", out.String())
	}
	out.Reset()
	args = []string{"forecast", "backtest", "--trace", forecastFixture, "--model", model, "--methods", "lstm", "--warmup", "8", "--horizon", "5",
		"--stride", "2", "--train-steps-per-origin", "0", "--json"}
	if err := run(context.Background(), args, nil, &out, &errOut); err != nil {
		t.Fatalf("run(%v): %v", args, err)
	}
	var got backtestReport
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out.String())
	}
	if len(got.Scores) != 1 || got.Scores[0].Method != "lstm" || got.Config.InitialTrainSteps != 0 || got.Scores[0].TrainSteps != 0 {
		t.Errorf("report %+v: want one lstm score with no training in the backtest", got)
	}
}

func TestForecastTrainUsageErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"format":"keras"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		flag string
	}{
		{"no trace", []string{"forecast", "train", "--out", "m.json"}, "--trace"},
		{"no out", []string{"forecast", "train", "--trace", forecastFixture}, "--out"},
		{"zero steps", []string{"forecast", "train", "--trace", forecastFixture, "--out", "m.json", "--steps", "0"}, "--steps"},
		{"negative units", []string{"forecast", "train", "--trace", forecastFixture, "--out", "m.json", "--units", "-1"}, "--units"},
		{"bad lags", []string{"forecast", "train", "--trace", forecastFixture, "--out", "m.json", "--lags", "0"}, "--lags"},
		{"missing model", []string{"forecast", "backtest", "--trace", forecastFixture, "--model", "/nonexistent/m.json"}, "--model"},
		{"bad model", []string{"forecast", "backtest", "--trace", forecastFixture, "--model", bad}, "--model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(context.Background(), tc.args, nil, &out, &errOut)
			var ue *usageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.flag) {
				t.Errorf("run(%v) error = %v, want a usage error (exit status 2) naming %s", tc.args, err, tc.flag)
			}
		})
	}
}
