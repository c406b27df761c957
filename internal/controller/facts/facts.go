package facts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Path is where a gateway serves its facts.
const Path = "/internal/v1/facts"

// MaxBytes bounds a facts document; a replica serving thousands of models stays well under it.
const MaxBytes = 4 << 20

// Counters are one model's cumulative counters on one replica since it started (Queued is a
// gauge: the requests waiting now).
type Counters struct {
	// Arrivals counts requests that arrived; Completed those answered; Missed those of them
	// that failed or missed the SLO threshold.
	Arrivals  int64 `json:"arrivals"`
	Completed int64 `json:"completed"`
	Missed    int64 `json:"missed"`
	// InSystemNS is the total time completed requests spent in the gateway, in nanoseconds.
	InSystemNS int64 `json:"in_system_ns"`
	// Queued is the number of requests waiting in the model's queue now.
	Queued int64 `json:"queued"`
}

// Report is one replica's facts: who it is, whether it leads, and its models' counters.
type Report struct {
	// Identity is the replica's leader-election identity.
	Identity string `json:"identity"`
	// Leader is true when the replica holds the Lease (runs the controller).
	Leader bool `json:"leader"`
	// Models maps a model's name to its counters.
	Models map[string]Counters `json:"models"`
	// Fleet is, on the leader, the whole fleet's counters its controller reads (the Gatherer's
	// sums since it first saw each replica); empty on a follower.
	Fleet map[string]Counters `json:"fleet,omitempty"`
}

// ErrInvalid wraps every reason Decode refuses a document.
var ErrInvalid = errors.New("invalid facts")

// Decode reads one Report: strict JSON (unknown fields refused), at most MaxBytes, an identity
// and non-negative counters.
func Decode(r io.Reader) (Report, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxBytes+1))
	if err != nil {
		return Report{}, fmt.Errorf("read facts: %w", err)
	}
	if len(data) > MaxBytes {
		return Report{}, fmt.Errorf("%w: larger than %d bytes", ErrInvalid, MaxBytes)
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	var rep Report
	if err := dec.Decode(&rep); err != nil {
		return Report{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if dec.More() {
		return Report{}, fmt.Errorf("%w: trailing data after the document", ErrInvalid)
	}
	if rep.Identity == "" || len(rep.Identity) > 253 {
		return Report{}, fmt.Errorf("%w: identity must have 1 to 253 bytes, got %d", ErrInvalid, len(rep.Identity))
	}
	for _, m := range []map[string]Counters{rep.Models, rep.Fleet} {
		for name, c := range m {
			if name == "" {
				return Report{}, fmt.Errorf("%w: empty model name", ErrInvalid)
			}
			if c.Arrivals < 0 || c.Completed < 0 || c.Missed < 0 || c.InSystemNS < 0 || c.Queued < 0 {
				return Report{}, fmt.Errorf("%w: model %s: negative counter %+v", ErrInvalid, name, c)
			}
		}
	}
	return rep, nil
}

// Local returns this replica's report; the gateway's Counters behind it.
type Local func() (Report, error)

// Handler serves GET Path with the report local returns, as JSON. A non-empty token is
// required as "Authorization: Bearer <token>" (the gateway's admin token).
func Handler(local Local, token string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			w.WriteHeader(http.StatusMethodNotAllowed)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "method " + r.Method + " not allowed (allowed: GET)"})
			return
		}
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "facts need the admin token"})
			return
		}
		rep, err := local()
		if err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		_ = json.NewEncoder(w).Encode(rep)
	})
}

// Fetch GETs base+Path and decodes the report.
func Fetch(ctx context.Context, c *http.Client, base, token string) (Report, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+Path, nil)
	if err != nil {
		return Report{}, fmt.Errorf("facts of %s: %w", base, err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return Report{}, fmt.Errorf("facts of %s: %w", base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return Report{}, fmt.Errorf("facts of %s: HTTP %d", base, resp.StatusCode)
	}
	rep, err := Decode(resp.Body)
	if err != nil {
		return Report{}, fmt.Errorf("facts of %s: %w", base, err)
	}
	return rep, nil
}

// Peers lists the base URLs of the gateway replicas (this one may be among them; the Gatherer
// skips its own identity).
type Peers interface {
	URLs(ctx context.Context) ([]string, error)
}

// Static is a fixed list of peers (controller.peers.static).
type Static []string

// URLs implements Peers.
func (s Static) URLs(context.Context) ([]string, error) { return slices.Clone(s), nil }

// Gatherer sums the counters of every replica into the fleet's: Gather fetches the peers'
// reports; Reading returns a model's fleet counters for the controller. Counters stay monotone
// when a replica comes, goes or restarts: each replica contributes the increase of its own
// counters since it was first seen (a restart, counters going down, starts it over from zero),
// and Queued is the sum of the queues of the replicas that answered the last Gather.
// Gather and Reading may be called from any goroutine.
type Gatherer struct {
	identity string
	local    Local
	peers    Peers
	client   *http.Client
	token    string
	timeout  time.Duration

	mu    sync.Mutex
	last  map[string]map[string]Counters // identity -> model -> counters last seen
	total map[string]Counters            // model -> fleet counters (Queued: last Gather's sum)
	seen  map[string]time.Time           // identity -> last answer
}

// GathererOptions configure a Gatherer; zero fields take defaults.
type GathererOptions struct {
	// Client sends the GETs; nil means a client without keep-alive reuse limits.
	Client *http.Client
	// Token is sent as the bearer token (the peers' admin token).
	Token string
	// Timeout bounds one peer's answer; default 500 ms.
	Timeout time.Duration
}

// NewGatherer returns a Gatherer of this replica's report (local, identity) and its peers'.
func NewGatherer(identity string, local Local, peers Peers, opts GathererOptions) *Gatherer {
	if opts.Client == nil {
		opts.Client = &http.Client{}
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 500 * time.Millisecond
	}
	if peers == nil {
		peers = Static(nil)
	}
	return &Gatherer{identity: identity, local: local, peers: peers, client: opts.Client, token: opts.Token,
		timeout: opts.Timeout, last: map[string]map[string]Counters{}, total: map[string]Counters{}, seen: map[string]time.Time{}}
}

// Gather fetches every peer's report concurrently (each within the timeout) and adds it and
// the local one to the fleet's counters. A peer that does not answer is left out of this
// sample (its increase is counted when it answers again); the error joins the failures.
func (g *Gatherer) Gather(ctx context.Context, now time.Time) error {
	var errs []error
	reps := []Report{}
	if rep, err := g.local(); err != nil {
		errs = append(errs, fmt.Errorf("local facts: %w", err))
	} else {
		rep.Identity = g.identity
		reps = append(reps, rep)
	}
	urls, err := g.peers.URLs(ctx)
	if err != nil {
		errs = append(errs, fmt.Errorf("list peers: %w", err))
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, u := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, g.timeout)
			defer cancel()
			rep, err := Fetch(cctx, g.client, u, g.token)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			if rep.Identity != g.identity {
				reps = append(reps, rep)
			}
		}()
	}
	wg.Wait()
	g.add(reps, now)
	return errors.Join(errs...)
}

// add folds reports into the totals: the first report of a replica is its baseline.
func (g *Gatherer) add(reps []Report, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	queued := map[string]int64{}
	done := map[string]bool{}
	for _, rep := range reps {
		if done[rep.Identity] {
			continue // the same replica listed twice (a static URL and a discovered one)
		}
		done[rep.Identity] = true
		prev, known := g.last[rep.Identity]
		for model, c := range rep.Models {
			queued[model] += c.Queued
			if !known {
				continue
			}
			t := g.total[model]
			t.Arrivals += increase(prev[model].Arrivals, c.Arrivals)
			t.Completed += increase(prev[model].Completed, c.Completed)
			t.Missed += increase(prev[model].Missed, c.Missed)
			t.InSystemNS += increase(prev[model].InSystemNS, c.InSystemNS)
			g.total[model] = t
		}
		g.last[rep.Identity] = maps.Clone(rep.Models)
		g.seen[rep.Identity] = now
	}
	for model, t := range g.total {
		t.Queued = queued[model]
		g.total[model] = t
	}
	for model, q := range queued {
		if _, ok := g.total[model]; !ok {
			g.total[model] = Counters{Queued: q}
		}
	}
}

// increase is cur − prev, or cur when the counter went down (the replica restarted).
func increase(prev, cur int64) int64 {
	if cur < prev {
		return cur
	}
	return cur - prev
}

// Reading returns a model's fleet counters as of the last Gather.
func (g *Gatherer) Reading(model string) Counters {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.total[model]
}

// Replicas returns the identities that answered at or after since, sorted.
func (g *Gatherer) Replicas(since time.Time) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for id, at := range g.seen {
		if !at.Before(since) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Join lists the URLs of several Peers, each once; a failing source's error is returned with the
// others' URLs.
func Join(ps ...Peers) Peers { return joined(ps) }

type joined []Peers

func (j joined) URLs(ctx context.Context) ([]string, error) {
	var out []string
	var errs []error
	for _, p := range j {
		us, err := p.URLs(ctx)
		if err != nil {
			errs = append(errs, err)
		}
		for _, u := range us {
			if !slices.Contains(out, u) {
				out = append(out, u)
			}
		}
	}
	return out, errors.Join(errs...)
}
