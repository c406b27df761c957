package leader

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

var tim = Timings{LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond}

func TestDecideTable(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	for _, tc := range []struct {
		name string
		v    View
		now  time.Duration
		want Decision
	}{
		{"no Lease: create it", View{}, 0, Decision{Action: Acquire}},
		{"released: take it at once", View{Exists: true, ObservedAt: at(0)}, 10 * time.Millisecond, Decision{Action: Acquire}},
		{"held by another: wait for observed + lease", View{Exists: true, Holder: "b", ObservedAt: at(time.Second)}, 2 * time.Second,
			Decision{Action: Wait, At: at(5 * time.Second)}},
		{"held by another, lease passed: acquire", View{Exists: true, Holder: "b", ObservedAt: at(time.Second)}, 5 * time.Second, Decision{Action: Acquire}},
		{"lease passed but a failed try just now: retry after retry period",
			View{Exists: true, Holder: "b", ObservedAt: at(0), LastTry: at(4100 * time.Millisecond)}, 4200 * time.Millisecond,
			Decision{Action: Wait, At: at(4600 * time.Millisecond)}},
		{"own record, not leading: acquire (conditional write)", View{Exists: true, Holder: "a", ObservedAt: at(0)}, time.Millisecond, Decision{Action: Acquire}},
		{"leading: renew after retry period", View{Exists: true, Holder: "a", Leading: true, LastRenew: at(0), LastTry: at(0)}, 500 * time.Millisecond,
			Decision{Action: Renew}},
		{"leading: wait for the next renewal", View{Exists: true, Holder: "a", Leading: true, LastRenew: at(0), LastTry: at(0)}, 100 * time.Millisecond,
			Decision{Action: Wait, At: at(500 * time.Millisecond)}},
		{"leading, renewals failing: wait no later than the deadline",
			View{Exists: true, Holder: "a", Leading: true, LastRenew: at(0), LastTry: at(2900 * time.Millisecond)}, 2950 * time.Millisecond,
			Decision{Action: Wait, At: at(3 * time.Second)}},
		{"leading, renew deadline passed: step down", View{Exists: true, Holder: "a", Leading: true, LastRenew: at(0), LastTry: at(2900 * time.Millisecond)},
			3 * time.Second, Decision{Action: StepDown}},
		{"leading, Lease shows another holder: step down", View{Exists: true, Holder: "b", Leading: true, LastRenew: at(0), LastTry: at(0)},
			time.Millisecond, Decision{Action: StepDown}},
	} {
		if got := Decide(tc.v, "a", at(tc.now), tim); got != tc.want {
			t.Errorf("%s: Decide = %v at %v, want %v at %v", tc.name, got.Action, got.At.Sub(t0), tc.want.Action, tc.want.At.Sub(t0))
		}
	}
}

// Over random views: a follower never acquires a Lease held by another identity before
// ObservedAt + LeaseDuration; a leader never keeps leading at or after LastRenew +
// RenewDeadline, and never waits past it; a Wait's time is in the future.
func TestDecideProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(r.IntN(n)) * time.Millisecond) }
	for i := range 100000 {
		v := View{Exists: r.IntN(8) > 0, Holder: []string{"", "a", "b", "c"}[r.IntN(4)], ObservedAt: ms(10000),
			Leading: r.IntN(2) == 0, LastRenew: ms(10000), LastTry: ms(10000)}
		now := ms(20000)
		d := Decide(v, "a", now, tim)
		if d.Action == Acquire && v.Exists && v.Holder != "" && v.Holder != "a" && now.Before(v.ObservedAt.Add(tim.LeaseDuration)) {
			t.Fatalf("case %d: %+v at %v: acquired %v after the observation, before the lease duration", i, v, now.Sub(t0), now.Sub(v.ObservedAt))
		}
		if v.Leading && !now.Before(v.LastRenew.Add(tim.RenewDeadline)) && d.Action != StepDown {
			t.Fatalf("case %d: %+v at %v: %v past the renew deadline", i, v, now.Sub(t0), d.Action)
		}
		if v.Leading && d.Action == Wait && d.At.After(v.LastRenew.Add(tim.RenewDeadline)) {
			t.Fatalf("case %d: leader waits until %v, past its renew deadline", i, d.At.Sub(t0))
		}
		if d.Action == Wait && !d.At.After(now) {
			t.Fatalf("case %d: %+v at %v: waits until %v, not in the future", i, v, now.Sub(t0), d.At.Sub(t0))
		}
		if !v.Leading && (d.Action == Renew || d.Action == StepDown) {
			t.Fatalf("case %d: follower told to %v", i, d.Action)
		}
	}
}

// TestDecideNeverTwoLeaders simulates three replicas on one shared clock (1 ms steps) driven by
// Decide against a Lease store with conditional writes: random request latencies (some of
// seconds: a partition), random watch delays, crashes of the leader and restarts. The terms
// (from the acquire's answer to the step-down or crash) of two replicas never overlap, and
// leadership keeps moving on after each crash.
func TestDecideNeverTwoLeaders(t *testing.T) {
	tm := Timings{LeaseDuration: 400 * time.Millisecond, RenewDeadline: 300 * time.Millisecond, RetryPeriod: 50 * time.Millisecond}
	for seed := range uint64(20) {
		s := newSim(seed, tm)
		s.run(20000)
		if err := s.check(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if s.crashes < 3 || len(s.terms) < s.crashes {
			t.Fatalf("seed %d: %d terms for %d crashes: leadership did not move on", seed, len(s.terms), s.crashes)
		}
	}
}

type simEvent struct {
	at     int
	rv     int
	holder string
}

type simReq struct {
	renew            bool
	start            int
	commitAt, doneAt int
	deadline         int
	base             int
	committed        bool
}

type simReplica struct {
	id       string
	v        View
	rv       int
	alive    bool
	reviveAt int
	req      *simReq
	events   []simEvent
	termAt   int // -1 when not leading
}

type simTerm struct {
	id         string
	start, end int
}

type sim struct {
	r        *rand.Rand
	tm       Timings
	t0       time.Time
	rv       int
	holder   string
	reps     []*simReplica
	terms    []simTerm
	crashes  int
	nextKill int
}

func newSim(seed uint64, tm Timings) *sim {
	s := &sim{r: rand.New(rand.NewPCG(seed, 7)), tm: tm, t0: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), nextKill: 1500}
	for _, id := range []string{"a", "b", "c"} {
		s.reps = append(s.reps, &simReplica{id: id, alive: true, termAt: -1})
	}
	return s
}

func (s *sim) at(ms int) time.Time { return s.t0.Add(time.Duration(ms) * time.Millisecond) }

// latency is a request's or a watch event's delay: mostly a few ms, sometimes seconds.
func (s *sim) latency() int {
	if s.r.IntN(50) == 0 {
		return s.r.IntN(2000)
	}
	return 1 + s.r.IntN(20)
}

func (s *sim) run(steps int) {
	for now := 0; now < steps; now++ {
		for _, p := range s.reps {
			s.commit(p, now)
		}
		for _, p := range s.reps {
			s.answer(p, now)
			s.deliver(p, now)
			s.step(p, now)
		}
		s.chaos(now)
	}
	for _, p := range s.reps {
		if p.termAt >= 0 {
			s.terms = append(s.terms, simTerm{p.id, p.termAt, steps})
		}
	}
}

func (s *sim) commit(p *simReplica, now int) {
	q := p.req
	if q == nil || q.commitAt != now || s.rv != q.base {
		return
	}
	s.rv++
	s.holder, q.committed = p.id, true
	for _, o := range s.reps {
		last := 0
		if n := len(o.events); n > 0 {
			last = o.events[n-1].at
		}
		o.events = append(o.events, simEvent{at: max(last, now+s.latency()), rv: s.rv, holder: p.id})
	}
}

func (s *sim) answer(p *simReplica, now int) {
	q := p.req
	if q == nil || now != min(q.doneAt, q.deadline) {
		return
	}
	p.req = nil
	if !p.alive || !q.committed || q.doneAt > q.deadline {
		return
	}
	s.observe(p, q.base+1, p.id, now)
	p.v.LastRenew = s.at(q.start)
	if !q.renew {
		p.v.Leading, p.termAt = true, now
	}
}

func (s *sim) observe(p *simReplica, rv int, holder string, now int) {
	if rv <= p.rv {
		return
	}
	p.rv = rv
	p.v.Exists, p.v.Holder, p.v.ObservedAt = true, holder, s.at(now)
}

func (s *sim) deliver(p *simReplica, now int) {
	for len(p.events) > 0 && p.events[0].at <= now {
		e := p.events[0]
		p.events = p.events[1:]
		if p.alive {
			s.observe(p, e.rv, e.holder, now)
		}
	}
}

func (s *sim) step(p *simReplica, now int) {
	if !p.alive {
		if now >= p.reviveAt {
			*p = simReplica{id: p.id, alive: true, termAt: -1, events: p.events}
		}
		return
	}
	if p.req != nil {
		return
	}
	switch Decide(p.v, p.id, s.at(now), s.tm).Action {
	case StepDown:
		p.v.Leading = false
		s.terms = append(s.terms, simTerm{p.id, p.termAt, now})
		p.termAt = -1
	case Acquire:
		p.v.LastTry = s.at(now)
		if s.rv != p.rv { // the read before the write shows a newer version
			s.observe(p, s.rv, s.holder, now)
			return
		}
		s.send(p, false, now, now+int(s.tm.RenewDeadline/time.Millisecond))
	case Renew:
		p.v.LastTry = s.at(now)
		s.send(p, true, now, int(p.v.LastRenew.Sub(s.t0)/time.Millisecond)+int(s.tm.RenewDeadline/time.Millisecond))
	}
}

func (s *sim) send(p *simReplica, renew bool, now, deadline int) {
	c := now + s.latency()
	p.req = &simReq{renew: renew, start: now, commitAt: c, doneAt: c + s.latency(), deadline: deadline, base: p.rv}
}

// chaos kills the leader now and then (SIGKILL: no step-down, no release) and revives it later.
func (s *sim) chaos(now int) {
	if now < s.nextKill {
		return
	}
	s.nextKill = now + 1000 + s.r.IntN(3000)
	for _, p := range s.reps {
		if p.alive && p.termAt >= 0 {
			s.terms = append(s.terms, simTerm{p.id, p.termAt, now})
			p.alive, p.termAt, p.reviveAt = false, -1, now+200+s.r.IntN(2000)
			s.crashes++
			return
		}
	}
}

func (s *sim) check() error {
	for i, a := range s.terms {
		for _, b := range s.terms[i+1:] {
			if a.id != b.id && a.start < b.end && b.start < a.end {
				return fmt.Errorf("terms overlap: %s [%d, %d) ms and %s [%d, %d) ms", a.id, a.start, a.end, b.id, b.start, b.end)
			}
		}
	}
	return nil
}
