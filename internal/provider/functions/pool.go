package functions

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sloserve/sloserve/internal/keepalive"
)

// acquire takes a warm instance or starts one.
func (f *Tier) acquire(ctx context.Context, model string, memoryMB int) (*inst, bool, error) {
	for {
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			return nil, false, errors.New("function tier: closed")
		}
		p := f.pool(model, memoryMB)
		if n := len(p.idle); n > 0 {
			in := p.idle[n-1]
			p.idle = p.idle[:n-1]
			p.enter(time.Now())
			f.mu.Unlock()
			return in, false, nil
		}
		if p.live < f.cfg.MaxInstances && p.busy == 0 {
			// Nothing will free sooner than a cold start: wait for this one.
			p.live++
			p.enter(time.Now())
			f.mu.Unlock()
			return f.coldStart(ctx, p, model, memoryMB)
		}
		if p.live < f.cfg.MaxInstances {
			// Busy instances free within a batch's time, far sooner than a cold start: start one
			// behind (it joins the idle ones when ready, settle) and take whichever is free
			// first, as Knative's activator buffers a request for the first ready pod.
			p.live++
			p.busy++ // the start's place until settle
			go f.startBehind(p, model, memoryMB)
		}
		freed := p.freed
		f.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return nil, false, fmt.Errorf("function tier %s: all %d instances busy: %w", model, f.cfg.MaxInstances, ctx.Err())
		}
	}
}

// coldStart starts an instance for a caller that waits for it until ctx ends. The start itself
// outlives ctx, as Knative's scale-from-zero outlives the request that triggered it: a caller
// that gives up (its deadline passed while the instance was cold) leaves the instance, once
// ready, idle in the pool for the requests buffered behind it.
func (f *Tier) coldStart(ctx context.Context, p *pool, model string, memoryMB int) (*inst, bool, error) {
	type started struct {
		in  *inst
		err error
	}
	ch := make(chan started, 1)
	go func() {
		in, err := f.start(context.WithoutCancel(ctx), model, memoryMB)
		ch <- started{in, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			f.settle(p, nil)
			return nil, false, r.err
		}
		return r.in, true, nil
	case <-ctx.Done():
		go func() { f.settle(p, (<-ch).in) }()
		return nil, false, fmt.Errorf("function tier %s: gave up waiting for a cold start: %w", model, context.Cause(ctx))
	}
}

// startBehind cold-starts an instance of p (counted in p.live and p.busy by the caller) that
// no caller waits for; settle puts it among the idle ones.
func (f *Tier) startBehind(p *pool, model string, memoryMB int) {
	in, err := f.start(context.Background(), model, memoryMB)
	if err != nil {
		f.log.Warn("function tier: cold start behind busy instances", "model", model, "err", err)
		in = nil
	}
	f.settle(p, in)
}

// settle ends a cold start nobody waits for: a started instance joins the idle ones (or is
// stopped when the tier has closed), a failed one frees its place.
func (f *Tier) settle(p *pool, in *inst) {
	f.mu.Lock()
	closed := f.closed
	switch {
	case in == nil:
		p.live--
	case closed:
		p.live--
		f.stats[f.modelOf(p)].Live--
	default:
		in.idleAt = time.Now()
		p.idle = append(p.idle, in)
	}
	p.busy--
	f.signal(p)
	f.mu.Unlock()
	if in != nil && closed {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = f.rt.Stop(ctx, in.id)
	}
}

// modelOf is p's model; f.mu is held.
func (f *Tier) modelOf(p *pool) string {
	for k, q := range f.pools {
		if q == p {
			return k.model
		}
	}
	return ""
}

// enter counts an invocation starting at now; f.mu is held.
func (p *pool) enter(now time.Time) {
	if p.runStart.IsZero() {
		p.runStart = now
	}
	p.busy++
}

// endRun tells the keep-alive policy of the open run once the pool has been idle for gap at
// now; f.mu is held.
func (p *pool) endRun(now time.Time, gap time.Duration) {
	if p.busy == 0 && !p.runStart.IsZero() && !p.lastEnd.IsZero() && now.Sub(p.lastEnd) >= gap {
		p.ka.Observe(p.runStart, p.lastEnd)
		p.runStart = time.Time{}
	}
}

// signal wakes the callers waiting for an instance; f.mu is held.
func (f *Tier) signal(p *pool) {
	close(p.freed)
	p.freed = make(chan struct{})
}

// pool returns (making) the pool of (model, memoryMB); f.mu is held.
func (f *Tier) pool(model string, memoryMB int) *pool {
	k := poolKey{model, memoryMB}
	if p, ok := f.pools[k]; ok {
		return p
	}
	var ka keepalive.Policy = &keepalive.Fixed{KeepAlive: f.cfg.Tier.KeepAlive}
	if f.cfg.KeepAlive != nil {
		ka = f.cfg.KeepAlive()
	}
	p := &pool{ka: ka, freed: make(chan struct{})}
	f.pools[k] = p
	if _, ok := f.stats[model]; !ok {
		f.stats[model] = &Stats{}
	}
	f.stats[model].MemoryMB = memoryMB
	return p
}

// start launches an instance and waits until it is ready: the cold start, measured.
func (f *Tier) start(ctx context.Context, model string, memoryMB int) (*inst, error) {
	born := time.Now()
	id, _, err := f.rt.Start(ctx, model, memoryMB)
	if err != nil {
		return nil, fmt.Errorf("function tier %s: cold start: %w", model, err)
	}
	ready := time.Now()
	in := &inst{id: id, born: born, idleAt: ready, coldTime: ready.Sub(born)}
	f.mu.Lock()
	s := f.stats[model]
	s.ColdStarts++
	s.ColdStartSeconds += in.coldTime.Seconds()
	s.Live++
	f.mu.Unlock()
	f.log.Info("function cold start", "model", model, "memory_mb", memoryMB, "instance", id, "cold_start", in.coldTime)
	return in, nil
}

// release returns an instance to its pool after an invocation and bills it; afterCold says the
// invocation waited for the instance's cold start and succeeded.
func (f *Tier) release(model string, memoryMB int, in *inst, inv Invocation, end time.Time, afterCold bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if afterCold {
		f.stats[model].AfterColdStart++
	}
	if s := f.stats[model]; inv.CostUSD > 0 { // an invocation that ran (never zero: the per-request price)
		s.Invocations++
		s.BilledGBSeconds += float64(memoryMB) / 1024 * inv.Billed.Seconds()
		s.CostUSD += inv.CostUSD
	}
	p := f.pools[poolKey{model, memoryMB}]
	in.idleAt = end
	p.idle = append(p.idle, in)
	p.busy--
	p.lastEnd = end
	f.signal(p)
}

// reap releases idle instances past their keep-alive windows, every ReapEvery until Close.
func (f *Tier) reap() {
	defer close(f.done)
	t := time.NewTicker(f.cfg.ReapEvery)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-t.C:
			f.reapOnce(time.Now())
		}
	}
}

func (f *Tier) reapOnce(now time.Time) {
	type gone struct {
		model string
		in    *inst
	}
	var out []gone
	f.mu.Lock()
	for k, p := range f.pools {
		p.endRun(now, f.cfg.RunGap)
		if !p.runStart.IsZero() {
			continue // a run is going on: its idle instances are part of it
		}
		w := p.ka.Windows(now)
		keep := p.idle[:0]
		for _, in := range p.idle {
			gap := now.Sub(in.idleAt)
			if !p.lastEnd.IsZero() {
				gap = now.Sub(p.lastEnd)
			}
			if w.Loaded(max(gap, 0)) {
				keep = append(keep, in)
				continue
			}
			out = append(out, gone{k.model, in})
			p.live--
			f.stats[k.model].Live--
			f.stats[k.model].InstanceSeconds += now.Sub(in.born).Seconds()
		}
		p.idle = keep
	}
	f.mu.Unlock()
	for _, g := range out {
		f.log.Info("function released after keep-alive", "model", g.model, "instance", g.in.id, "idle", now.Sub(g.in.idleAt).Round(time.Millisecond))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := f.rt.Stop(ctx, g.in.id); err != nil {
			f.log.Warn("function release", "instance", g.in.id, "err", err)
		}
		cancel()
	}
}

// Close stops every instance and the runtime.
func (f *Tier) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	close(f.stop)
	now := time.Now()
	for k, p := range f.pools {
		for _, in := range p.idle {
			f.stats[k.model].InstanceSeconds += now.Sub(in.born).Seconds()
			f.stats[k.model].Live--
		}
	}
	f.mu.Unlock()
	<-f.done
	return f.rt.Close()
}
