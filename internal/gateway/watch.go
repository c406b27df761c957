package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/sloserve/sloserve/internal/provider"
)

// InstanceLister is the part of a provider.Provider that the gateway watches.
type InstanceLister interface {
	Instances(ctx context.Context) ([]provider.Instance, error)
}

// Sync makes the gateway's instances match the provider's: a ready instance of a served model
// that the gateway does not know is added; a known instance that is no longer ready, or whose
// address changed (a restarted worker), starts draining — its batches in flight complete, and
// waiting requests go to the other instances. Instances of models the gateway does not serve
// are ignored. Sync does not wait for drains to finish.
func (g *Gateway) Sync(ctx context.Context, insts []provider.Instance) error {
	want := map[string]map[string]provider.Instance{} // model -> id -> instance
	for _, in := range insts {
		if in.State != provider.StateReady || in.Addr == "" {
			continue
		}
		if want[in.Spec.Model] == nil {
			want[in.Spec.Model] = map[string]provider.Instance{}
		}
		want[in.Spec.Model][in.ID] = in
	}
	var errs []error
	for _, model := range g.ModelNames() {
		b, err := g.batcher(model)
		if err != nil {
			continue
		}
		have, ok := b.list()
		if !ok {
			return ErrShuttingDown
		}
		w := want[model]
		for _, in := range have {
			if pi, ok := w[in.ID]; ok && pi.Addr == in.Addr {
				delete(w, in.ID)
				continue
			}
			b.Drain(in.ID) // an instance already gone needs no drain
		}
		for id, pi := range w {
			in := Instance{ID: id, Addr: pi.Addr, MaxBatch: pi.Spec.MaxBatch}
			if !pi.Spec.Resources.IsZero() {
				// Placed by INFless (controller.INFless): the instance batches on its own, b =
				// MaxBatch with timeout t_slo − t_exec. MArk's specs carry a W_batch too, but its
				// instances share the model queue's policy, as before.
				in.MaxWait = pi.Spec.MaxWait
			}
			if err := g.AddInstance(ctx, model, in); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) == 0 {
		g.unsynced.Store(false) // the fleet view is in (Options.ReadyAfterSync)
	}
	return errors.Join(errs...)
}

// Watch calls Sync with the provider's instances every interval, and at once whenever poke
// receives (a provider.ReadyNotifier's ReadyEvents: a ready instance takes batches as soon as
// its readiness check passes, not up to an interval later; nil never fires), until ctx is done,
// logging failures; it returns ctx's error.
func (g *Gateway) Watch(ctx context.Context, p InstanceLister, every time.Duration, poke <-chan struct{}) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		insts, err := p.Instances(ctx)
		if err == nil {
			err = g.Sync(ctx, insts)
		}
		if errors.Is(err, ErrShuttingDown) {
			return err
		}
		if err != nil && ctx.Err() == nil {
			g.log.Warn("instance sync failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		case <-poke:
		}
	}
}

// list returns the batcher's instances that take new batches; false when it has stopped.
func (b *served) list() ([]Instance, bool) {
	insts, ok := b.Instances()
	var l []Instance
	for _, in := range insts {
		if !in.Draining {
			l = append(l, in.Instance)
		}
	}
	return l, ok
}
