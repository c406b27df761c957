package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"sort"
	"strings"
	"testing"

	"github.com/sloserve/sloserve/internal/slo"
)

// helpPaths lists every command and sub-verb of the command table as the args that name it.
func helpPaths(t *testing.T) [][]string {
	t.Helper()
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	var paths [][]string
	for _, n := range names {
		paths = append(paths, []string{n})
		for _, v := range commands[n].verbs {
			paths = append(paths, []string{n, v})
		}
	}
	return paths
}

// TestHelpEveryCommand runs every command and sub-verb of the command table with -h, --help and
// 'sloserve help ...': each returns nil (exit 0) and prints a usage with examples to stdout; every
// entry has a helpTexts entry, so a new command cannot be added without help.
func TestHelpEveryCommand(t *testing.T) {
	for _, path := range helpPaths(t) {
		name := strings.Join(path, " ")
		if h := helpTexts[name]; h.synopsis == "" || len(h.examples) == 0 {
			t.Errorf("helpTexts[%q] has no synopsis or no examples", name)
		}
		if len(path) == 2 && helpTexts[name].summary == "" {
			t.Errorf("helpTexts[%q] has no summary (sub-verbs need one)", name)
		}
		for _, args := range [][]string{
			append(append([]string{}, path...), "-h"),
			append(append([]string{}, path...), "--help"),
			append([]string{"help"}, path...),
		} {
			t.Run(strings.Join(args, "_"), func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				err := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
				if err != nil {
					t.Fatalf("run(%q) = %v, want nil (exit 0)", args, err)
				}
				out := stdout.String()
				if !strings.HasPrefix(out, "usage: sloserve "+path[0]) || !strings.Contains(out, "examples:") {
					t.Errorf("run(%q) stdout does not start with a usage line or lacks examples:\n%s", args, out)
				}
				if exitCode(err, &stderr) != 0 || stderr.Len() != 0 {
					t.Errorf("run(%q): exit %d, stderr %q", args, exitCode(err, &stderr), stderr.String())
				}
			})
		}
	}
}

// TestHelpHidesAliases: help lists a flag once under its consistent name, not its old spelling.
func TestHelpHidesAliases(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		want, hide string
	}{
		{[]string{"plan", "batch", "-h"}, "--rps", "--rate"},
		{[]string{"ensemble", "eval", "-h"}, "--rps", "--rate"},
		{[]string{"ensemble", "sim", "-h"}, "--rps", "--rate"},
		{[]string{"profile", "-h"}, "--models", "--model "},
	} {
		t.Run(strings.Join(tc.args, "_"), func(t *testing.T) {
			var stdout bytes.Buffer
			if err := run(context.Background(), tc.args, nil, &stdout, &bytes.Buffer{}); err != nil {
				t.Fatal(err)
			}
			out := stdout.String()
			if !strings.Contains(out, "  "+tc.want+" ") || strings.Contains(out, "  "+tc.hide) {
				t.Errorf("help lists %q without %q? got:\n%s", tc.want, tc.hide, out)
			}
		})
	}
}

// TestUsageBadFlagEveryCommand: a bad flag on every command and sub-verb is a usage error (exit 2)
// naming the flag.
func TestUsageBadFlagEveryCommand(t *testing.T) {
	for _, path := range helpPaths(t) {
		if len(commands[path[0]].verbs) > 0 && len(path) == 1 {
			continue // a dispatcher takes a verb, not flags
		}
		args := append(append([]string{}, path...), "--no-such-flag")
		t.Run(strings.Join(args, "_"), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), args, nil, &stdout, &stderr)
			var ue *usageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), "no-such-flag") {
				t.Fatalf("run(%q) = %v, want a usage error naming -no-such-flag", args, err)
			}
			if got := exitCode(err, &stderr); got != 2 {
				t.Errorf("exit code %d, want 2", got)
			}
		})
	}
}

// TestVersion: 'version', '--version' and 'version --json' print the module version and commit;
// the ldflags overrides win over the build info.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var stdout bytes.Buffer
		if err := run(context.Background(), args, nil, &stdout, &bytes.Buffer{}); err != nil {
			t.Fatalf("run(%q) = %v", args, err)
		}
		if !strings.HasPrefix(stdout.String(), "sloserve ") || !strings.Contains(stdout.String(), "commit ") {
			t.Errorf("run(%q) = %q, want 'sloserve VERSION (commit ...)'", args, stdout.String())
		}
	}
	old := [2]string{version, commit}
	version, commit = "v9.9.9", "abc1234"
	defer func() { version, commit = old[0], old[1] }()
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"version", "--json"}, nil, &stdout, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), `"version": "v9.9.9"`) || !strings.Contains(stdout.String(), `"commit": "abc1234"`) {
		t.Errorf("version --json with ldflags = %s", stdout.String())
	}
}

// TestLoadVerdict: load exits non-zero when every request failed, and with --fail-on-slo when
// attainment is below the target.
func TestLoadVerdict(t *testing.T) {
	for _, tc := range []struct {
		name    string
		s       slo.Summary
		failSLO bool
		wantErr bool
		wantSLO bool
	}{
		{"all failed", slo.Summary{Requests: 10, Failed: 10}, false, true, false},
		{"all rejected", slo.Summary{Requests: 10, Rejected: 10}, false, true, false},
		{"missed without flag", slo.Summary{Requests: 10, Completed: 10, SLOAttainment: 0.5}, false, false, false},
		{"missed with flag", slo.Summary{Requests: 10, Completed: 10, SLOAttainment: 0.5}, true, true, true},
		{"met with flag", slo.Summary{Requests: 10, Completed: 10, SLOAttainment: 0.99}, true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := loadVerdict(tc.s, "http://x", 0.98, tc.failSLO)
			if (err != nil) != tc.wantErr || errors.Is(err, errSLOMissed) != tc.wantSLO {
				t.Fatalf("loadVerdict = %v, want error %v (SLO missed %v)", err, tc.wantErr, tc.wantSLO)
			}
			if err != nil && exitCode(err, &bytes.Buffer{}) != 1 {
				t.Errorf("exit code %d, want 1", exitCode(err, &bytes.Buffer{}))
			}
		})
	}
}

// TestLoadDeadTarget: 'load' against a port nobody listens on exits 1.
func TestLoadDeadTarget(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"load", "--target", "http://127.0.0.1:1", "--rps", "50", "--duration", "200ms"}, nil, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "requests failed") || exitCode(err, &stderr) != 1 {
		t.Fatalf("run(load dead target) = %v, want 'all N requests failed' (exit 1)", err)
	}
}

// TestHelpErrorIsErrHelp: helpError still satisfies errors.Is(err, flag.ErrHelp) for callers
// that branch on it.
func TestHelpErrorIsErrHelp(t *testing.T) {
	if !errors.Is(showHelp("plan"), flag.ErrHelp) {
		t.Fatal("helpError does not wrap flag.ErrHelp")
	}
}
