package experiment

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/sloserve/sloserve/internal/experiment/tune"
	"github.com/sloserve/sloserve/internal/sim"
	"github.com/sloserve/sloserve/internal/slo"
	"github.com/sloserve/sloserve/internal/trace"
)

// Twin baselines (issue #17 item 6: the scoreboard in ≤ 5 minutes). sagemaker-tuned and
// sagemaker-ec2-tuned run the same policy on the same machines and differ in the type names
// they launch ("ml.c5.large" or "c5.large") and so in the bill alone: every simulation one asks
// for, the other asks for too, with the same outcome but the cost. RunTogether runs their
// searches side by side and answers the runs they both ask for with one simulation billed twice
// (sim.Config.Twins), so the pair costs about one search. Each search sees exactly the outcomes
// its own runs give (TestRunTogetherMatchesAlone), so the answers are RunTuned's.

// RunTogether tunes and runs each of bs as RunTuned does, bs[1:] being twins of bs[0] (the same
// Policy, a TwinType each): their searches run in lockstep, and whenever the searches still
// running each wait on a run, the runs of bs[0] and its twins that are the same but for their
// bills (the same knob values, part and budgets) are one simulation. It returns each baseline's
// outcome and error.
func (w World) RunTogether(ctx context.Context, bs []TunedBaseline, tuning, eval *trace.Trace, tp, ep TracePart) ([]TunedRun, []error) {
	n := len(bs)
	runs, errs := make([]TunedRun, n), make([]error, n)
	for _, b := range bs[min(n, 1):] {
		if b.Policy != bs[0].Policy || b.TwinType == nil || !sameBut(b.Fixed, bs[0].Fixed, b.TwinKeys) {
			for k := range errs {
				errs[k] = fmt.Errorf("%s: not a twin of %s (the same policy and fixed options but its twin keys %v, and a twin type, needed)",
					b.Name, bs[0].Name, b.TwinKeys)
			}
			return runs, errs
		}
	}
	if n == 1 {
		runs[0], errs[0] = w.RunTuned(ctx, bs[0], tuning, eval, tp, ep)
		return runs, errs
	}
	calls, finished := make(chan *jointCall), make(chan int)
	for i, b := range bs {
		go func() {
			share := func(ctx context.Context, r runReq) (slo.Summary, error) {
				c := &jointCall{who: i, r: r, done: make(chan struct{})}
				calls <- c
				<-c.done
				return c.s, c.err
			}
			runs[i], errs[i] = w.runTuned(ctx, b, tuning, eval, tp, ep, share)
			finished <- i
		}()
	}
	waiting := make([]*jointCall, n)
	for live, pending := n, 0; live > 0; {
		select {
		case c := <-calls:
			waiting[c.who] = c
			pending++
		case <-finished:
			live--
		}
		if pending == live && pending > 0 {
			w.answer(ctx, bs, waiting)
			for i, c := range waiting {
				if c != nil {
					close(c.done)
					waiting[i] = nil
				}
			}
			pending = 0
		}
	}
	return runs, errs
}

// jointCall is a twin's run waiting for its answer.
type jointCall struct {
	who  int // index of the baseline in RunTogether's bs
	r    runReq
	s    slo.Summary
	err  error
	done chan struct{}
}

// answer answers the waiting calls (nil: none from that baseline): those that are the same
// simulation but for the bill go together when bs[0] is among them, the others alone.
func (w World) answer(ctx context.Context, bs []TunedBaseline, waiting []*jointCall) {
	var keys []string
	groups := map[string][]*jointCall{}
	for _, c := range waiting {
		if c == nil {
			continue
		}
		o := maps.Clone(c.r.o)
		for _, b := range bs[1:] { // the keys that change only the bill (RunTogether checked the rest)
			for _, k := range b.TwinKeys {
				delete(o, k)
			}
		}
		r := c.r
		r.o, r.costCap = o, 0
		k := TraceDigest(r.tr) + "|" + w.key(r) // the twins cut the tuning prefix each
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], c)
	}
	for _, k := range keys {
		w.runJoint(ctx, bs, groups[k])
	}
}

// runJoint answers calls that are one simulation but for the bill, in bs order: the cached from
// the cache; the others, when bs[0]'s is among them, with one run of it billed for each twin,
// else alone.
func (w World) runJoint(ctx context.Context, bs []TunedBaseline, cs []*jointCall) {
	var miss []*jointCall
	for _, c := range cs {
		if s, hit, err := w.cached(c.r); hit {
			c.s, c.err = s, err
		} else {
			miss = append(miss, c)
		}
	}
	if len(miss) == 0 {
		return
	}
	if len(miss) == 1 || miss[0].who != 0 {
		for _, c := range miss {
			c.s, c.err = w.run(ctx, c.r)
		}
		return
	}
	var twins []sim.Twin
	for _, c := range miss[1:] {
		twins = append(twins, sim.Twin{Type: bs[c.who].TwinType, CostBudget: overCap(c.r.costCap)})
	}
	p, cfg, _, err := w.setup(miss[0].r, twins...)
	var res *sim.Result
	if err == nil {
		w.count()
		res, err = sim.Run(ctx, cfg, w.Catalog, w.Model, p, arrivalMemo.Arrivals(miss[0].r.tr, cfg.Seed))
	}
	switch {
	case errors.Is(err, sim.ErrNotTwin): // the catalog's twin types launch differently: apart
		for _, c := range miss {
			c.s, c.err = w.run(ctx, c.r)
		}
		return
	case err != nil:
		for _, c := range miss {
			c.err = err
		}
		return
	}
	miss[0].s, miss[0].err = w.keep(miss[0].r, res.Summary, res.Stop)
	for k, c := range miss[1:] {
		t := res.Twins[k]
		c.s, c.err = w.keep(c.r, t.Summary, t.Stop)
	}
}

// TwinGroups groups bs for RunTogether, by index: each baseline that is no twin, in bs's order,
// followed by the twins in bs that name it (TwinOf); a twin whose TwinOf is not in bs (or is
// itself a twin) stands alone.
func TwinGroups(bs []TunedBaseline) [][]int {
	idx := map[string]int{}
	for i, b := range bs {
		if _, ok := idx[b.Name]; !ok {
			idx[b.Name] = i
		}
	}
	leader := func(i int) int {
		if l, ok := idx[bs[i].TwinOf]; ok && bs[i].TwinOf != "" && bs[l].TwinOf == "" && l != i {
			return l
		}
		return i
	}
	at := map[int]int{}
	var out [][]int
	for i := range bs {
		if leader(i) == i {
			at[i] = len(out)
			out = append(out, []int{i})
		}
	}
	for i := range bs {
		if l := leader(i); l != i {
			out[at[l]] = append(out[at[l]], i)
		}
	}
	return out
}

// sameBut reports whether a and b hold the same options but the keys skip.
func sameBut(a, b tune.Options, skip []string) bool {
	a, b = maps.Clone(a), maps.Clone(b)
	for _, k := range skip {
		delete(a, k)
		delete(b, k)
	}
	return len(a) == len(b) && tune.Options(a).Key() == tune.Options(b).Key()
}
