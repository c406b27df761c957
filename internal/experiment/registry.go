// Package experiment runs the simulator's experiments: comparing policies on a trace (Compare),
// the scoreboard, the papers' settings read from sim config files (FileConfig), and the named
// experiments `sloserve experiment NAME` runs, each printing the table a doc quotes. It stands
// above the simulator (floor 6 of docs/architecture.md); the simulator holds only the event loops
// and the virtual cloud.
package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"time"
)

// ErrUnknown reports an experiment name that is not registered.
var ErrUnknown = errors.New("unknown experiment")

// Options are what every experiment may read; each says in its Doc which it uses.
type Options struct {
	// Root is the repository root: docs/ and examples/ configs and testdata/ are relative to it.
	Root string
	// Data is the shared data directory (../shared/data from the root): traces, profiles,
	// ensembles, prices.
	Data string
	// Duration, when > 0, replaces the experiment's replayed window (shorter runs).
	Duration time.Duration
	// Peaks, when set, replaces the peak rates (rps per function) of the INFless load tables.
	Peaks []float64
	// Sets, when set, keeps only the named trace sets.
	Sets []string
	// Policies, when set, keeps only the named policies (where the experiment compares policies).
	Policies []string
	// Seed overrides the seed when non-zero.
	Seed uint64
	// Progress, when set, gets a line now and then (stderr).
	Progress io.Writer
	// Pool runs independent runs (the scoreboard's; ScoreboardConfig.Pool); nil: one at a time.
	Pool func(ctx context.Context, n int, do func(i int))
}

// root returns p relative to the repository root.
func (o Options) root(p string) string { return filepath.Join(o.Root, p) }

// data returns p relative to the shared data directory.
func (o Options) data(p string) string { return filepath.Join(o.Data, p) }

// progress writes one line to o.Progress when it is set.
func (o Options) progress(format string, a ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, format+"\n", a...)
	}
}

// keep reports whether name passes the filter (an empty filter keeps everything).
func keep(filter []string, name string) bool {
	if len(filter) == 0 {
		return true
	}
	for _, f := range filter {
		if f == name {
			return true
		}
	}
	return false
}

// Experiment is one named experiment: it runs the simulator and prints the table(s) a doc quotes.
type Experiment struct {
	// Name is what `sloserve experiment NAME` takes.
	Name string
	// Summary is one line for `sloserve experiment list`.
	Summary string
	// Doc names the page that quotes the output, and the data and time it takes.
	Doc string
	// Run runs the experiment and writes its tables to w.
	Run func(ctx context.Context, o Options, w io.Writer) error
}

var registry = map[string]Experiment{}

// register adds e; a duplicate name is a programming error.
func register(e Experiment) {
	if _, dup := registry[e.Name]; dup {
		panic("experiment: duplicate " + e.Name)
	}
	registry[e.Name] = e
}

// Lookup returns the named experiment.
func Lookup(name string) (Experiment, error) {
	e, ok := registry[name]
	if !ok {
		return Experiment{}, fmt.Errorf("%w %q (have %v)", ErrUnknown, name, Names())
	}
	return e, nil
}

// Names returns the registered experiments' names, sorted.
func Names() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// All returns the registered experiments sorted by name.
func All() []Experiment {
	var out []Experiment
	for _, n := range Names() {
		out = append(out, registry[n])
	}
	return out
}
