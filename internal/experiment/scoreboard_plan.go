package experiment

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strings"
	"time"

	"github.com/sloserve/sloserve/internal/experiment/tune"
	"github.com/sloserve/sloserve/internal/sim"
	"github.com/sloserve/sloserve/internal/slo"
	"github.com/sloserve/sloserve/internal/trace"
)

// scoreJob is one row of the scoreboard: a paper-default run, a tuned baseline (search and
// evaluation run) or the oracle, on one trace under one setting.
type scoreJob struct {
	setting, trace, row string
	group               int     // (setting, trace) index: rows are ranked within a group
	weight              float64 // expected simulated requests: the longest jobs start first
	run                 func(ctx context.Context) (ScoreEntry, error)
	// runTwins, instead of run, fills this row and its twins' rows at once (RunTogether); a
	// twin's job has neither and is done by its leader's.
	runTwins func(ctx context.Context) ([]ScoreEntry, []error)
	twins    []*scoreJob
	entry    ScoreEntry
	note     *ScoreNote
}

func (j *scoreJob) do(ctx context.Context) {
	// Labelled, a CPU profile (sim --cpuprofile) splits by row: go tool pprof -tags.
	pprof.Do(ctx, pprof.Labels("setting", j.setting, "trace", j.trace, "row", j.row), func(ctx context.Context) {
		switch {
		case j.run != nil:
			e, err := j.run(ctx)
			j.set(ctx, e, err)
		case j.runTwins != nil:
			es, errs := j.runTwins(ctx)
			for k, jj := range append([]*scoreJob{j}, j.twins...) {
				jj.set(ctx, es[k], errs[k])
			}
		}
	})
}

// set records the row's outcome.
func (j *scoreJob) set(ctx context.Context, e ScoreEntry, err error) {
	if err != nil {
		if ctx.Err() == nil {
			j.note = &ScoreNote{Setting: j.setting, Trace: j.trace, Policy: j.row, Err: err}
		}
		return
	}
	e.Setting, e.Split = j.setting, string(tune.Evaluation)
	e.Trace = j.trace
	j.entry = e
}

// scoreRows splits c.Policies into registered policies and tuned baselines.
func scoreRows(c ScoreboardConfig) (policies []string, tuned []TunedBaseline, err error) {
	if len(c.Policies) == 0 {
		tuned = c.Tuned
		if tuned == nil {
			tuned = DefaultTunedBaselines()
		}
		return sim.Names(), tuned, nil
	}
	all := c.Tuned
	if all == nil {
		all = DefaultTunedBaselines()
	}
	for _, name := range c.Policies {
		if !strings.HasSuffix(name, "-tuned") {
			policies = append(policies, name)
			continue
		}
		found := false
		for _, b := range all {
			if b.Name == name {
				tuned, found = append(tuned, b), true
			}
		}
		if !found {
			return nil, nil, fmt.Errorf("scoreboard: no tuned baseline %q", name)
		}
	}
	return policies, tuned, nil
}

// planScoreboard loads every setting and trace and lists the jobs, in output order.
func planScoreboard(c ScoreboardConfig) ([]*scoreJob, []ScoreNote, error) {
	settings := c.Settings
	if len(settings) == 0 {
		settings = DefaultScoreSettings()
	}
	policies, tuned, err := scoreRows(c)
	if err != nil {
		return nil, nil, err
	}
	names, paths, err := ScoreTraces(c.TraceDirs)
	if err != nil {
		return nil, nil, err
	}
	if len(paths) == 0 {
		return nil, nil, fmt.Errorf("scoreboard: no *.csv traces under %v", c.TraceDirs)
	}
	var jobs []*scoreJob
	var notes []ScoreNote
	group := 0
	for _, st := range settings {
		w, err := loadWorld(c, st)
		if err != nil {
			notes = append(notes, ScoreNote{Setting: st.Name, Err: err})
			continue
		}
		for ti, path := range paths {
			g, err := planTrace(c, st, w, names[ti], path, policies, tuned, group)
			if err != nil {
				notes = append(notes, ScoreNote{Setting: st.Name, Trace: names[ti], Err: err})
				continue
			}
			jobs = append(jobs, g...)
			group++
		}
	}
	return jobs, notes, nil
}

// loadWorld loads a setting's config, catalog and model.
func loadWorld(c ScoreboardConfig, st ScoreSetting) (World, error) {
	var fc *FileConfig
	key := st.Name
	if st.Config != "" {
		p := filepath.Join(c.Root, st.Config)
		f, err := LoadFileConfig(p)
		if err != nil {
			return World{}, err
		}
		fc = f
		d, err := FileDigest(p)
		if err != nil {
			return World{}, err
		}
		key += "@" + d
	}
	cfg := sim.DefaultConfig()
	cfg.SeriesPeriod = 0
	if fc != nil {
		if err := fc.Apply(&cfg); err != nil {
			return World{}, err
		}
	}
	if c.Seed != 0 {
		cfg.Seed = c.Seed
	}
	cat, err := fc.LoadCatalog()
	if err != nil {
		return World{}, err
	}
	model, err := fc.LoadModel()
	if err != nil {
		return World{}, err
	}
	w := World{Config: cfg, Catalog: &cat, Model: model, Key: fmt.Sprintf("%s|seed %d|max %g", key, cfg.Seed, st.MaxRPS), Cache: c.Cache}
	if fc != nil {
		w.Decoder = fc.Decoder
	}
	return w, nil
}

// planTrace lists one (setting, trace) group's jobs: the policies' paper defaults, the tuned
// baselines and the oracle, all scored on the trace's evaluation part.
func planTrace(c ScoreboardConfig, st ScoreSetting, w World, name, path string, policies []string, tuned []TunedBaseline, group int) ([]*scoreJob, error) {
	tr, err := trace.Open(path)
	if err == nil {
		tr, err = scaleTrace(tr, st.MaxRPS, 0)
	}
	if err != nil {
		return nil, err
	}
	tuning, eval, parts, err := Split(name, tr, c.Duration)
	if err != nil {
		return nil, err
	}
	d, err := FileDigest(path)
	if err != nil {
		return nil, err
	}
	w.Config.Trace = name
	w.Key += "|" + name + "@" + d
	w.TunePrefix = c.TunePrefix
	job := func(row string, run func(ctx context.Context) (ScoreEntry, error)) *scoreJob {
		return &scoreJob{setting: st.Name, trace: name, row: row, group: group, run: run}
	}
	var jobs []*scoreJob
	for _, p := range policies {
		j := job(p, func(ctx context.Context) (ScoreEntry, error) {
			s, err := w.RunPolicy(ctx, p, nil, eval, parts[1], sim.Load(eval), 0)
			return ScoreEntry{Summary: s}, err
		})
		j.weight = eval.Expected()
		jobs = append(jobs, j)
	}
	// The tuned rows, in tuned's order; twins run with the baseline they are twins of.
	tj := make([]*scoreJob, len(tuned))
	for i, b := range tuned {
		tj[i] = job(b.Name, nil)
	}
	for _, g := range TwinGroups(tuned) {
		bs := make([]TunedBaseline, len(g))
		for k, i := range g {
			bs[k] = tuned[i]
		}
		lead := tj[g[0]]
		lead.weight = eval.Expected() + tunedWeight(tuning, w.TunePrefix)
		for _, i := range g[1:] {
			lead.twins = append(lead.twins, tj[i])
		}
		lead.runTwins = func(ctx context.Context) ([]ScoreEntry, []error) {
			rs, errs := w.RunTogether(ctx, bs, tuning, eval, parts[0], parts[1])
			es := make([]ScoreEntry, len(rs))
			for k, r := range rs {
				es[k] = ScoreEntry{Summary: r.Summary, Tuned: &TunedInfo{Options: r.Search.Options, Attainment: r.Search.Tuning.Attainment,
					Cost: r.Search.Tuning.Cost, Met: r.Search.Met, Runs: r.Search.Runs, PrefixS: r.Prefix.Seconds()}}
			}
			return es, errs
		}
	}
	jobs = append(jobs, tj...)
	jobs = append(jobs, job(OraclePolicy, func(context.Context) (ScoreEntry, error) {
		c, err := OracleCost(w.Catalog, w.Model, w.Config.SLO, w.plannerTypes(), arrivalMemo.Arrivals(eval, w.Config.Seed))
		if err != nil {
			return ScoreEntry{}, err
		}
		s := slo.Summary{Policy: OraclePolicy, DurationS: eval.Duration().Seconds(), SLOAttainment: 1,
			SLO: slo.SpecJSON{ThresholdMS: float64(w.Config.SLO.Threshold) / float64(time.Millisecond), Target: w.Config.SLO.Target}}
		s.CostUSD.Total = c
		return ScoreEntry{Summary: s}, nil
	}))
	return jobs, nil
}

// tunedRunsGuess is about how many tuning-part runs a tuned baseline's search takes (3–15), to
// start the long searches first.
const tunedRunsGuess = 8

// tunedWeight is the expected requests of a tuned baseline's search on tuning: tunedRunsGuess
// runs of the whole part, or of its first prefix plus the whole-part check when the search is
// coarse to fine (World.TunePrefix).
func tunedWeight(tuning *trace.Trace, prefix time.Duration) float64 {
	n := tuning.Expected()
	if d := tuning.Duration(); prefix > 0 && prefix < d {
		return n + tunedRunsGuess*n*float64(prefix)/float64(d)
	}
	return tunedRunsGuess * n
}

// longestFirst returns the jobs' indices by weight, heaviest first (ties in plan order): on a
// few workers the last job to start then is a short one, not a tuner's week-long search.
func longestFirst(jobs []*scoreJob) []int {
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return jobs[order[a]].weight > jobs[order[b]].weight })
	return order
}

// FileDigest returns a short digest of a file's contents (cache keys).
func FileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("digest %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)[:8]), nil
}
