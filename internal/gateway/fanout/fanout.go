package fanout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sloserve/sloserve/internal/batcher"
	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/ensemble"
	"github.com/sloserve/sloserve/internal/oip"
)

// Live Cocktail ensembles (Gunasekaran et al., NSDI'22; docs/ensembles-live.md).
//
//	POST /v2/models/{ensemble}/infer  parameters {latency_ms, accuracy} ─▶ constraint k
//	  ─▶ members for k: Cache.SelectCached (O1 candidates, O2 choice) and, for dynamic selection,
//	     the constraint's ensemble.Dynamic (Alg. 1), stepped on the request path every interval
//	  ─▶ one sub-request per member into the member's own batcher (its queue, batching policy,
//	     instances, retries) with the ensemble request's arrival and deadline
//	  ─▶ votes that arrive before the deadline ─▶ ClassWeights.Weighted (§4.1.1) or Majority
//	  ─▶ answer: the vote shares per class, parameters naming members asked and votes counted
//	  ─▶ the members' predictions kept under the request id in a bounded LRU
//	POST /v2/models/{ensemble}/feedback {id, label} ─▶ ClassWeights.Learn, Dynamic.Record
//
// Members that failed (not merely late) are skipped for memberDownFor, unless every member is.

// Response parameters of an ensemble answer.
const (
	// ParamEnsembleMembers names the members asked, comma-separated, most accurate first.
	ParamEnsembleMembers = "ensemble_members"
	// ParamEnsembleVoters names the members whose votes were counted (answered in time).
	ParamEnsembleVoters = "ensemble_voters"
	// ParamEnsembleVotes is the number of votes counted.
	ParamEnsembleVotes = "ensemble_votes"
	// ParamEnsembleClasses is the voted class of each row, comma-separated.
	ParamEnsembleClasses = "ensemble_classes"
	// ParamEnsembleWinningVotes is, per row, how many members voted the winning class.
	ParamEnsembleWinningVotes = "ensemble_winning_votes"
)

// memberDownFor is how long a member whose sub-request failed (503/502, not a late answer) is
// left out of fan-outs: the batcher's own downFor for an unreachable instance.
const memberDownFor = batcher.DownFor

// readyTTL bounds how stale a member's "has instances" flag may be.
const readyTTL = 100 * time.Millisecond

// Errors of ensemble requests.
var (
	// ErrNoVote means no member answered an ensemble request before its deadline (504).
	ErrNoVote = fmt.Errorf("gateway: ensemble: no member answered before the deadline: %w", oip.ErrDeadline)
	// ErrNoMemberAvailable means every member failed the ensemble request (503).
	ErrNoMemberAvailable = fmt.Errorf("gateway: ensemble: every member failed: %w", oip.ErrUnavailable)
	// ErrUnknownRequest means feedback names a request id the ensemble does not remember
	// (never answered, already labelled, or evicted from the LRU).
	ErrUnknownRequest = errors.New("unknown or expired request id")
)

// Ensemble describes one live ensemble.
type Ensemble struct {
	// Name is the ensemble's name in OIP paths; it must not be a served model's name.
	Name string
	// Members are the member models' profiles; each Name must be a model the gateway serves,
	// and all must share one input and output schema.
	Members []ensemble.Model
	// Default is the constraint of requests that give no latency_ms or accuracy.
	Default ensemble.Constraint
	// Selection is config.SelectionDynamic, SelectionStatic or SelectionFull.
	Selection string
	// Voting is config.VotingWeighted or VotingMajority.
	Voting string
	// Config holds Cocktail's constants (interval, margins, popularity window).
	Config ensemble.Config
	// FeedbackEntries bounds the requests remembered for label feedback; 0 means
	// config.DefaultFeedbackEntries.
	FeedbackEntries int
	// Clock drives selection intervals and popularity (not deadlines); nil means time.Now.
	Clock func() time.Time
}

// Stats are an ensemble's counters and current state.
type Stats struct {
	// Requests is the number of ensemble requests answered with a vote; Failed those answered
	// with an error (no vote).
	Requests, Failed int64
	// Invocations is the number of member sub-requests sent; Votes those that arrived in time
	// and were counted; Late those still running at the deadline; MemberErrors those that failed.
	Invocations, Votes, Late, MemberErrors int64
	// Feedback is the number of labelled rows learnt.
	Feedback int64
	// Importance is each member's importance weight (Alg. 2, §4.2.2): the fraction of the
	// ensemble's requests of the last PopularityWindow that asked it.
	Importance map[string]float64
	// Selections maps each constraint seen ("<latency, accuracy>") to its current members.
	Selections map[string][]string
	// Reasons maps each constraint to the last selection decision's reason.
	Reasons map[string]string
	// CacheHits and CacheMisses count the selection cache's lookups.
	CacheHits, CacheMisses uint64
}

// MeanMembers returns Invocations / requests asked (answered or failed).
func (s Stats) MeanMembers() float64 {
	if n := s.Requests + s.Failed; n > 0 {
		return float64(s.Invocations) / float64(n)
	}
	return 0
}

// Members is what ensembles need of the gateway that serves their members.
type Members interface {
	// Infer answers one member sub-request (c.Model is the member).
	Infer(ctx context.Context, c *oip.Call) (*oip.InferenceResponse, error)
	// Instances returns the ids of a member's instances that take new batches.
	Instances(model string) ([]string, error)
	// ModelReady reports whether a member can answer now.
	ModelReady(ctx context.Context, model, version string) (bool, error)
	// Metadata returns a served model's metadata (nil until known), or the error that it is not
	// served.
	Metadata(model string) (*oip.ModelMetadata, error)
}

// Set holds a gateway's ensembles.
type Set struct {
	members Members
	log     *slog.Logger
	mu      sync.Mutex // serialises Add
	all     atomic.Pointer[map[string]*Runtime]
}

// NewSet returns an empty Set whose ensembles fan out to members; a nil log discards.
func NewSet(members Members, log *slog.Logger) *Set {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Set{members: members, log: log}
}

// Get returns the ensemble called name.
func (s *Set) Get(name string) (*Runtime, bool) {
	m := s.all.Load()
	if m == nil {
		return nil, false
	}
	e, ok := (*m)[name]
	return e, ok
}

// Names returns the ensembles' names, sorted.
func (s *Set) Names() []string {
	m := s.all.Load()
	if m == nil {
		return nil
	}
	out := make([]string, 0, len(*m))
	for n := range *m {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Runtime is a live ensemble. Selection, weights, popularity and the LRU are plain values of
// the ensemble package owned by one goroutine each; mu serialises them across requests.
type Runtime struct {
	g       Members
	spec    Ensemble
	models  []ensemble.Model // most accurate first
	cache   *ensemble.Cache
	clock   func() time.Time
	seq     atomic.Uint64
	counter struct {
		requests, failed, invocations, votes, late, memberErrors, feedback atomic.Int64
	}

	mu          sync.Mutex
	constraints *lru[ensemble.Constraint, *constraintState] // the maxConstraints most recent
	weights     *ensemble.ClassWeights
	pop         *ensemble.Popularity
	recent      *lru[string, recentRequest]
	down        map[string]time.Time // member -> left out until
	ready       map[string]readyMark
}

// constraintState is what an ensemble keeps per constraint: its dynamic selection (Alg. 1) and
// the last selection decision's reason.
type constraintState struct {
	dyn    *ensemble.Dynamic
	reason string
}

// maxConstraints bounds the constraints an ensemble keeps selection state for; the least
// recently used is dropped (and restarts from the full ensemble if asked again).
const maxConstraints = 256

type readyMark struct {
	ok bool
	at time.Time
}

// Add starts serving an ensemble over models the gateway already serves.
func (s *Set) Add(e Ensemble) error {
	if e.Name == "" {
		return errors.New("add ensemble: name must not be empty")
	}
	if _, err := s.members.Metadata(e.Name); err == nil {
		return fmt.Errorf("add ensemble %s: a model has that name", e.Name)
	}
	if len(e.Members) == 0 {
		return fmt.Errorf("add ensemble %s: no members", e.Name)
	}
	seen := map[string]bool{}
	for _, m := range e.Members {
		if err := m.Validate(); err != nil {
			return fmt.Errorf("add ensemble %s: %w", e.Name, err)
		}
		if _, err := s.members.Metadata(m.Name); err != nil {
			return fmt.Errorf("add ensemble %s: member %w", e.Name, err)
		}
		if seen[m.Name] {
			return fmt.Errorf("add ensemble %s: member %q appears twice", e.Name, m.Name)
		}
		seen[m.Name] = true
	}
	if err := e.Default.Validate(); err != nil {
		return fmt.Errorf("add ensemble %s: default %w", e.Name, err)
	}
	if err := e.Config.Validate(); err != nil {
		return fmt.Errorf("add ensemble %s: %w", e.Name, err)
	}
	switch e.Selection {
	case config.SelectionDynamic, config.SelectionStatic, config.SelectionFull:
	default:
		return fmt.Errorf("add ensemble %s: selection must be dynamic, static or full, got %q", e.Name, e.Selection)
	}
	switch e.Voting {
	case config.VotingWeighted, config.VotingMajority:
	default:
		return fmt.Errorf("add ensemble %s: voting must be weighted or majority, got %q", e.Name, e.Voting)
	}
	if e.FeedbackEntries < 0 {
		return fmt.Errorf("add ensemble %s: feedback entries must be >= 0, got %d", e.Name, e.FeedbackEntries)
	}
	if e.FeedbackEntries == 0 {
		e.FeedbackEntries = config.DefaultFeedbackEntries
	}
	rt := &Runtime{g: s.members, spec: e, cache: ensemble.NewCache(), clock: e.Clock,
		constraints: newLRU[ensemble.Constraint, *constraintState](maxConstraints),
		weights:     ensemble.NewClassWeights(ensemble.Precision, 0), pop: ensemble.NewPopularity(e.Config.PopularityWindow),
		recent: newLRU[string, recentRequest](e.FeedbackEntries), down: map[string]time.Time{}, ready: map[string]readyMark{}}
	if rt.clock == nil {
		rt.clock = time.Now
	}
	// Most accurate first: the order of Majority's tie-break and of the parameters.
	rt.models = ensemble.Candidates(e.Members, ensemble.Constraint{Latency: 1<<62 - 1, Accuracy: 1}, 0)
	for _, m := range rt.models {
		rt.weights.SetPrior(m.Name, m.Accuracy)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := map[string]*Runtime{}
	if p := s.all.Load(); p != nil {
		old = *p
	}
	if _, ok := old[e.Name]; ok {
		return fmt.Errorf("add ensemble %s: already served", e.Name)
	}
	next := make(map[string]*Runtime, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[e.Name] = rt
	s.all.Store(&next)
	s.log.Info("ensemble added", "ensemble", e.Name, "members", len(e.Members), "selection", e.Selection, "voting", e.Voting)
	return nil
}

// Stats returns the ensemble's counters, its members' importance weights (for the
// controller's weighted autoscaling, Alg. 2) and its current selections.
func (e *Runtime) Stats() Stats {
	c := &e.counter
	s := Stats{Requests: c.requests.Load(), Failed: c.failed.Load(), Invocations: c.invocations.Load(),
		Votes: c.votes.Load(), Late: c.late.Load(), MemberErrors: c.memberErrors.Load(), Feedback: c.feedback.Load(),
		Selections: map[string][]string{}, Reasons: map[string]string{}}
	s.CacheHits, s.CacheMisses = e.cache.Stats()
	now := e.clock()
	e.mu.Lock()
	defer e.mu.Unlock()
	s.Importance = e.pop.Weights(now)
	e.constraints.each(func(k ensemble.Constraint, st *constraintState) {
		if st.dyn != nil {
			s.Selections[k.String()] = st.dyn.Models()
		}
		if st.reason != "" {
			s.Reasons[k.String()] = st.reason
		}
	})
	return s
}

// constraint is the request's <latency, accuracy>, each defaulting to the ensemble's. Values the
// client chose are bucketed (bucketLatency, bucketAccuracy) so that clients cannot make the
// ensemble keep state for any number of distinct constraints; the request's deadline still
// comes from its own latency.
func (e *Runtime) constraint(s oip.RequestSLO) ensemble.Constraint {
	k := e.spec.Default
	if s.Latency > 0 && s.Latency != k.Latency {
		k.Latency = bucketLatency(s.Latency)
	}
	if s.Accuracy > 0 && s.Accuracy != k.Accuracy {
		k.Accuracy = bucketAccuracy(s.Accuracy)
	}
	return k
}

// bucketLatency rounds d down to two significant decimal digits (of its nanoseconds): at most
// 10 % stricter, 90 buckets per decade; round values (50 ms, 150 ms, 2 s) are kept.
func bucketLatency(d time.Duration) time.Duration {
	p := time.Duration(1)
	for d/p >= 100 {
		p *= 10
	}
	return d / p * p
}

// bucketAccuracy rounds a to three decimals (at least 0.001).
func bucketAccuracy(a float64) float64 {
	return max(math.Round(a*1000)/1000, 0.001)
}

// choose returns the members to ask for constraint k at now (selection time).
func (e *Runtime) choose(k ensemble.Constraint, now time.Time) ([]string, error) {
	sel, err := e.cache.SelectCached(e.spec.Members, k, e.spec.Config)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch e.spec.Selection {
	case config.SelectionFull:
		return candidates(sel.Candidates).names(), nil
	case config.SelectionStatic:
		e.constraints.put(k, &constraintState{reason: sel.Reason})
		return sel.Names(), nil
	}
	st, ok := e.constraints.get(k)
	if !ok {
		// Alg. 1 starts from the full ensemble of the O1 candidates and prunes it.
		d, err := ensemble.NewDynamic(e.spec.Config, k, sel.Candidates, nil, now)
		if err != nil {
			return nil, err
		}
		st = &constraintState{dyn: d, reason: "start from every candidate (Alg. 1 Full_Ensemble); O2 would pick " + strings.Join(sel.Names(), ",")}
		e.constraints.put(k, st)
	}
	if dec := st.dyn.Step(now); dec.Accuracy >= 0 || dec.Reason != "interval not over" {
		st.reason = dec.Reason
	}
	return st.dyn.Models(), nil
}

// candidates is a helper type for naming a model list.
type candidates []ensemble.Model

func (c candidates) names() []string {
	out := make([]string, len(c))
	for i, m := range c {
		out[i] = m.Name
	}
	return out
}

// asked filters the chosen members to those usable at t (real time): members with instances
// and not recently failed; when none is usable, every chosen member is asked.
func (e *Runtime) asked(chosen []string, t time.Time) []string {
	out := make([]string, 0, len(chosen))
	for _, m := range chosen {
		if e.usable(m, t) {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return chosen
	}
	return out
}

func (e *Runtime) usable(m string, t time.Time) bool {
	e.mu.Lock()
	until, rm := e.down[m], e.ready[m]
	e.mu.Unlock()
	if t.Before(until) {
		return false
	}
	if t.Sub(rm.at) < readyTTL {
		return rm.ok
	}
	ids, err := e.g.Instances(m)
	ok := err == nil && len(ids) > 0
	e.mu.Lock()
	e.ready[m] = readyMark{ok: ok, at: t}
	e.mu.Unlock()
	return ok
}

// memberAnswer is one member's answer to a sub-request.
type memberAnswer struct {
	model string
	resp  *oip.InferenceResponse
	err   error
}

// infer serves one ensemble request.
func (e *Runtime) Infer(ctx context.Context, c *oip.Call) (*oip.InferenceResponse, error) {
	rows, err := oip.Rows(c.Request)
	if err != nil {
		return nil, err
	}
	k := e.constraint(c.SLO)
	timeout := c.SLO.Bound()
	if timeout <= 0 {
		timeout = k.Latency
	}
	arrival := c.Arrival
	if arrival.IsZero() {
		arrival = time.Now()
	}
	now := e.clock()
	chosen, err := e.choose(k, now)
	if errors.Is(err, ensemble.ErrNoCandidate) {
		return nil, fmt.Errorf("%w: ensemble %s: no member meets latency_ms %v (with a %v margin)",
			oip.ErrBadRequest, e.spec.Name, k.Latency, e.spec.Config.LatencyMargin)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: ensemble %s: %v", oip.ErrBadRequest, e.spec.Name, err)
	}
	ask := e.asked(chosen, time.Now())
	id := c.Request.ID
	if id == "" {
		id = e.spec.Name + "-" + strconv.FormatUint(e.seq.Add(1), 10)
	}
	e.mu.Lock()
	e.pop.Record(now, ask)
	e.mu.Unlock()
	e.counter.invocations.Add(int64(len(ask)))

	sctx, cancel := context.WithDeadline(ctx, arrival.Add(timeout))
	defer cancel()
	answers := make(chan memberAnswer, len(ask)) // buffered: stragglers never block
	for _, m := range ask {
		// Each member's sub-request goes through Gateway.Infer like any request for that model
		// (its counters, admission and batcher), with the ensemble request's arrival and
		// deadline. The members read the request (and the raw body in sctx); each gets its own
		// header.
		req := *c.Request
		sub := &oip.Call{Model: m, Request: &req, Metadata: c.Metadata, SLO: oip.RequestSLO{Timeout: timeout}, Arrival: arrival}
		go func() {
			r, err := e.g.Infer(sctx, sub)
			answers <- memberAnswer{model: m, resp: r, err: err}
		}()
	}
	got := make(map[string]memberAnswer, len(ask))
	failed := 0
wait:
	for range ask {
		select {
		case a := <-answers:
			if a.err != nil {
				failed++
				if memberFailed(a.err) {
					e.counter.memberErrors.Add(1)
					e.markDown(a.model, time.Now())
				}
				continue
			}
			got[a.model] = a
		case <-sctx.Done():
			break wait
		}
	}
	e.counter.late.Add(int64(len(ask) - len(got) - failed))
	resp, err := e.vote(id, k, ask, got, int(rows))
	if err != nil {
		e.counter.failed.Add(1)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if failed == len(ask) {
			return nil, ErrNoMemberAvailable
		}
		return nil, err
	}
	e.counter.requests.Add(1)
	return resp, nil
}

// memberFailed reports whether a member's error means the member is failing (as opposed to a
// late answer or a shed request).
func memberFailed(err error) bool {
	var bg *batcher.BadGatewayError
	return errors.Is(err, oip.ErrUnavailable) || errors.As(err, &bg)
}

func (e *Runtime) markDown(m string, t time.Time) {
	e.mu.Lock()
	e.down[m] = t.Add(memberDownFor)
	e.mu.Unlock()
}

// rowVote is one row's votes and verdict, kept for feedback.
type rowVote struct {
	preds   []ensemble.Prediction
	verdict ensemble.Verdict
}

// recentRequest is what the LRU keeps of an answered ensemble request.
type recentRequest struct {
	constraint ensemble.Constraint
	rows       []rowVote
}

// vote decodes the members' answers, votes each row and builds the ensemble's answer.
func (e *Runtime) vote(id string, k ensemble.Constraint, ask []string, got map[string]memberAnswer, rows int) (*oip.InferenceResponse, error) {
	type scores struct {
		model  string
		data   []float32
		output string
	}
	var voters []scores
	classes := 0
	for _, m := range ask { // most accurate first
		a, ok := got[m]
		if !ok || len(a.resp.Outputs) == 0 {
			continue
		}
		out := a.resp.Outputs[0]
		data := out.FP32
		if out.Datatype == oip.DatatypeFP64 {
			data = make([]float32, len(out.FP64))
			for i, v := range out.FP64 {
				data[i] = float32(v)
			}
		}
		if rows <= 0 || len(data) == 0 || len(data)%rows != 0 || (classes > 0 && len(data)/rows != classes) {
			e.counter.memberErrors.Add(1)
			continue
		}
		classes = len(data) / rows
		voters = append(voters, scores{model: m, data: data, output: out.Name})
	}
	if len(voters) == 0 {
		return nil, ErrNoVote
	}
	e.counter.votes.Add(int64(len(voters)))
	shares := make([]float32, rows*classes)
	rec := recentRequest{constraint: k, rows: make([]rowVote, rows)}
	var cls, wins []string
	e.mu.Lock()
	for r := range rows {
		preds := make([]ensemble.Prediction, len(voters))
		for i, v := range voters {
			preds[i] = ensemble.Prediction{Model: v.model, Class: argmax(v.data[r*classes : (r+1)*classes])}
		}
		var verdict ensemble.Verdict
		row := shares[r*classes : (r+1)*classes]
		total := 0.0
		if e.spec.Voting == config.VotingMajority {
			verdict = ensemble.Majority(preds)
			for _, p := range preds {
				row[p.Class]++
				total++
			}
		} else {
			verdict = e.weights.Weighted(preds)
			for _, p := range preds {
				w := e.weights.Weight(p.Model, p.Class)
				row[p.Class] += float32(w)
				total += w
			}
		}
		for j := range row {
			row[j] = float32(float64(row[j]) / total)
		}
		rec.rows[r] = rowVote{preds: preds, verdict: verdict}
		cls = append(cls, strconv.Itoa(verdict.Class))
		wins = append(wins, strconv.Itoa(verdict.Votes))
	}
	e.recent.put(id, rec)
	e.mu.Unlock()
	names := make([]string, len(voters))
	for i, v := range voters {
		names[i] = v.model
	}
	return &oip.InferenceResponse{
		ModelName: e.spec.Name,
		ID:        id,
		Parameters: oip.Parameters{
			ParamEnsembleMembers:      strings.Join(ask, ","),
			ParamEnsembleVoters:       strings.Join(names, ","),
			ParamEnsembleVotes:        len(voters),
			ParamEnsembleClasses:      strings.Join(cls, ","),
			ParamEnsembleWinningVotes: strings.Join(wins, ","),
		},
		Outputs: []oip.Tensor{oip.NewFP32(voters[0].output, []int64{int64(rows), int64(classes)}, shares)},
	}, nil
}

func argmax(row []float32) int {
	best := 0
	for j, v := range row {
		if v > row[best] {
			best = j
		}
	}
	return best
}

// Label is one label feedback: the true class of each row of an answered ensemble request.
type Label struct {
	// ID is the ensemble answer's id.
	ID string `json:"id"`
	// Label is the true class of a one-row request.
	Label *int `json:"label,omitempty"`
	// Labels are the true classes of each row of a multi-row request.
	Labels []int `json:"labels,omitempty"`
}

// FeedbackResult reports what a feedback call learnt.
type FeedbackResult struct {
	// Learned is the number of labelled rows learnt.
	Learned int `json:"learned"`
	// Unknown lists the ids that were not (or no longer) remembered.
	Unknown []string `json:"unknown,omitempty"`
}

// Feedback learns labels for answered requests of an ensemble (§4.1.1: per-model, per-class
// weights learnt at run time; Alg. 1's interval accuracy). Each remembered request learns once;
// unknown ids are reported, not errors. A label out of range or a row count that does not match
// is an error wrapping oip.ErrBadRequest, and nothing is learnt.
func (e *Runtime) Feedback(labels []Label) (FeedbackResult, error) {
	var res FeedbackResult
	e.mu.Lock()
	defer e.mu.Unlock()
	type item struct {
		id     string
		rec    recentRequest
		labels []int
	}
	items := make([]item, 0, len(labels))
	batch := map[string]bool{}
	for i, l := range labels {
		ls := l.Labels
		if l.Label != nil {
			if len(ls) > 0 {
				return FeedbackResult{}, fmt.Errorf("%w: feedback[%d]: give label or labels, not both", oip.ErrBadRequest, i)
			}
			ls = []int{*l.Label}
		}
		if l.ID == "" || len(ls) == 0 {
			return FeedbackResult{}, fmt.Errorf("%w: feedback[%d]: needs an id and a label", oip.ErrBadRequest, i)
		}
		rec, ok := e.recent.peek(l.ID)
		if !ok || batch[l.ID] {
			res.Unknown = append(res.Unknown, l.ID)
			continue
		}
		if len(ls) != len(rec.rows) {
			return FeedbackResult{}, fmt.Errorf("%w: feedback[%d]: %d labels for a request of %d rows", oip.ErrBadRequest, i, len(ls), len(rec.rows))
		}
		for _, x := range ls {
			if x < 0 || x > 1<<20 {
				return FeedbackResult{}, fmt.Errorf("%w: feedback[%d]: label %d out of range", oip.ErrBadRequest, i, x)
			}
		}
		batch[l.ID] = true
		items = append(items, item{id: l.ID, rec: rec, labels: ls})
	}
	for _, it := range items {
		e.recent.remove(it.id)
		var d *ensemble.Dynamic
		if st, ok := e.constraints.peek(it.rec.constraint); ok {
			d = st.dyn
		}
		for r, row := range it.rec.rows {
			e.weights.Learn(row.preds, it.labels[r])
			if d != nil {
				d.Record(row.preds, row.verdict, it.labels[r])
			}
			res.Learned++
		}
	}
	e.counter.feedback.Add(int64(res.Learned))
	return res, nil
}

// Metadata is the first member's metadata under the ensemble's name; false while no member's
// is known.
func (e *Runtime) Metadata() (*oip.ModelMetadata, bool) {
	for _, m := range e.models {
		md, err := e.g.Metadata(m.Name)
		if err != nil {
			continue
		}
		if md != nil {
			out := *md
			out.Name = e.spec.Name
			out.Versions = nil
			out.Platform = "sloserve-ensemble"
			return &out, true
		}
	}
	return nil, false
}

// Ready reports whether any member has an instance.
func (e *Runtime) Ready(ctx context.Context) bool {
	for _, m := range e.models {
		if ok, _ := e.g.ModelReady(ctx, m.Name, ""); ok {
			return true
		}
	}
	return false
}

// Index lists the ensembles for the repository index.
func (s *Set) Index(ctx context.Context) []oip.RepositoryIndexEntry {
	var out []oip.RepositoryIndexEntry
	for _, n := range s.Names() {
		e, _ := s.Get(n)
		state := oip.StateReady
		if !e.Ready(ctx) {
			state = oip.StateUnavailable
		}
		out = append(out, oip.RepositoryIndexEntry{Name: n, State: state})
	}
	return out
}
