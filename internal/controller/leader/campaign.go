package leader

import (
	"context"
	"fmt"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// observation is the Lease as a watch event or a read showed it; gone means it does not exist.
type observation struct {
	lease *coordinationv1.Lease
	gone  bool
}

// campaign is one Run: the replica's view of the Lease (fed by the watch) and its term. Only
// run's goroutine touches it, but for the watch goroutine's channel.
type campaign struct {
	e      *Elector
	lead   func(context.Context)
	leases coordclient.LeaseInterface
	t      Timings
	obs    chan observation
	v      View
	cur    *coordinationv1.Lease // the version observed last (the base of a conditional write)
	rv     uint64                // its resourceVersion, when numeric
	cancel context.CancelFunc    // ends the running term
	done   chan struct{}         // closed when the term's lead returns
}

func newCampaign(e *Elector, lead func(context.Context)) *campaign {
	return &campaign{
		e: e, lead: lead, leases: e.cfg.Client.CoordinationV1().Leases(e.cfg.Namespace),
		t:   Timings{LeaseDuration: e.cfg.LeaseDuration, RenewDeadline: e.cfg.RenewDeadline, RetryPeriod: e.cfg.RetryPeriod},
		obs: make(chan observation, 16),
	}
}

// run decides (Decide) and acts until ctx ends, then ends the term and releases the Lease.
func (c *campaign) run(ctx context.Context) error {
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go c.watch(wctx)
	for {
		d := Decide(c.v, c.e.cfg.Identity, time.Now(), c.t)
		switch d.Action {
		case Acquire:
			c.acquire(ctx)
			continue
		case Renew:
			c.renew(ctx)
			continue
		case StepDown:
			c.stepDown("renewal missed or Lease taken")
			continue
		}
		var wake <-chan time.Time
		var timer *time.Timer
		if !d.At.IsZero() {
			timer = time.NewTimer(time.Until(d.At))
			wake = timer.C
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			if c.v.Leading {
				c.stepDown("stopping")
				c.release()
			}
			return ctx.Err()
		case o := <-c.obs:
			c.observe(o, time.Now())
		case <-wake:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// watch feeds c.obs with every change of the Lease: a watch on it (restarted when it ends) and a
// read at each start, so a change missed between two watches is seen. Stale versions are dropped
// by observe. Where the watch is refused (RBAC without `watch` on leases), the reads every
// RetryPeriod are the observations: client-go's polling, a retry period late at worst.
func (c *campaign) watch(ctx context.Context) {
	name := c.e.cfg.Name
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	warned := false
	for ctx.Err() == nil {
		w, err := c.leases.Watch(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil && !warned {
			c.e.log.Warn("leader: cannot watch the Lease; reading it every retry period", "err", err)
			warned = true
		}
		c.read(ctx)
		if err == nil {
			c.forward(ctx, w)
		}
		select {
		case <-ctx.Done():
		case <-time.After(c.t.RetryPeriod):
		}
	}
}

// read sends the Lease as the API server has it now.
func (c *campaign) read(ctx context.Context) {
	l, err := c.leases.Get(ctx, c.e.cfg.Name, metav1.GetOptions{})
	switch {
	case err == nil:
		c.send(ctx, observation{lease: l})
	case apierrors.IsNotFound(err):
		c.send(ctx, observation{gone: true})
	}
}

// forward sends w's events on the Lease until w ends or ctx does.
func (c *campaign) forward(ctx context.Context, w watch.Interface) {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			if l, ok := ev.Object.(*coordinationv1.Lease); ok && l.Name == c.e.cfg.Name {
				c.send(ctx, observation{lease: l, gone: ev.Type == watch.Deleted})
			}
		}
	}
}

func (c *campaign) send(ctx context.Context, o observation) {
	select {
	case c.obs <- o:
	case <-ctx.Done():
	}
}

// observe updates the view with o, seen at now: a version newer than the one held is a change of
// the Lease (ObservedAt = now); the same or an older one (a late watch event after this replica's
// own write) changes nothing. resourceVersions are etcd revisions, increasing for one object.
func (c *campaign) observe(o observation, now time.Time) {
	if o.gone {
		if o.lease != nil {
			if !c.newer(o.lease) {
				return
			}
			c.rv, _ = strconv.ParseUint(o.lease.ResourceVersion, 10, 64)
		}
		if c.cur != nil || c.v.Exists || c.v.ObservedAt.IsZero() {
			c.cur, c.v.Exists, c.v.Holder, c.v.ObservedAt = nil, false, "", now
			c.e.setHolder("")
		}
		return
	}
	if (c.cur != nil && o.lease.ResourceVersion == c.cur.ResourceVersion) || !c.newer(o.lease) {
		return
	}
	c.cur = o.lease
	c.rv, _ = strconv.ParseUint(o.lease.ResourceVersion, 10, 64)
	c.v.Exists, c.v.ObservedAt = true, now
	c.v.Holder = ""
	if h := o.lease.Spec.HolderIdentity; h != nil {
		c.v.Holder = *h
	}
	c.e.setHolder(c.v.Holder)
}

// newer reports whether l's resourceVersion is above the one held (true when either is not a
// number: then every different version counts as a change).
func (c *campaign) newer(l *coordinationv1.Lease) bool {
	rv, err := strconv.ParseUint(l.ResourceVersion, 10, 64)
	return err != nil || c.rv == 0 || rv > c.rv
}

// acquire writes this replica as the holder, conditional on the version read just before (a
// version other than the observed one is a change: observe it and decide again).
func (c *campaign) acquire(ctx context.Context) {
	start := time.Now()
	c.v.LastTry = start
	rctx, cancel := context.WithDeadline(ctx, start.Add(c.t.RenewDeadline))
	defer cancel()
	l, err := c.leases.Get(rctx, c.e.cfg.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		c.observe(observation{gone: true}, time.Now())
		rec := c.record(nil, start)
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: c.e.cfg.Name, Namespace: c.e.cfg.Namespace},
			Spec: resourcelock.LeaderElectionRecordToLeaseSpec(&rec)}
		if l, err = c.leases.Create(rctx, l, metav1.CreateOptions{}); err != nil {
			c.e.log.Debug("leader: create the Lease", "err", err)
			return
		}
		c.begin(ctx, l, start)
		return
	case err != nil:
		c.e.log.Warn("leader: read the Lease", "err", err)
		return
	}
	before := c.v
	c.observe(observation{lease: l}, time.Now())
	if c.v.ObservedAt != before.ObservedAt { // changed since the decision: decide again
		return
	}
	rec := c.record(resourcelock.LeaseSpecToLeaderElectionRecord(&l.Spec), start)
	up := l.DeepCopy()
	up.Spec = resourcelock.LeaderElectionRecordToLeaseSpec(&rec)
	if up, err = c.leases.Update(rctx, up, metav1.UpdateOptions{}); err != nil {
		c.e.log.Debug("leader: take the Lease", "err", err)
		return
	}
	c.begin(ctx, up, start)
}

// record is the record this replica writes over old (nil: none) at now: client-go's fields.
func (c *campaign) record(old *resourcelock.LeaderElectionRecord, now time.Time) resourcelock.LeaderElectionRecord {
	t := metav1.NewTime(now)
	rec := resourcelock.LeaderElectionRecord{HolderIdentity: c.e.cfg.Identity,
		LeaseDurationSeconds: int((c.t.LeaseDuration + time.Second - 1) / time.Second), AcquireTime: t, RenewTime: t}
	if old != nil {
		rec.LeaderTransitions = old.LeaderTransitions
		if old.HolderIdentity == c.e.cfg.Identity {
			rec.AcquireTime = old.AcquireTime
		} else {
			rec.LeaderTransitions++
		}
	}
	return rec
}

// begin starts a term after a successful acquire written as l, whose write started at start.
func (c *campaign) begin(ctx context.Context, l *coordinationv1.Lease, start time.Time) {
	c.observe(observation{lease: l}, time.Now())
	c.v.Leading, c.v.LastRenew = true, start
	lctx, cancel := context.WithCancel(ctx)
	c.cancel, c.done = cancel, make(chan struct{})
	c.e.startTerm()
	go func(done chan struct{}) {
		defer close(done)
		c.lead(lctx)
	}(c.done)
}

// renew writes a new renewTime over the version this replica last wrote, within the term's
// deadline (LastRenew + RenewDeadline).
func (c *campaign) renew(ctx context.Context) {
	start := time.Now()
	c.v.LastTry = start
	if c.cur == nil {
		return
	}
	rctx, cancel := context.WithDeadline(ctx, c.v.LastRenew.Add(c.t.RenewDeadline))
	defer cancel()
	up := c.cur.DeepCopy()
	rec := c.record(resourcelock.LeaseSpecToLeaderElectionRecord(&up.Spec), start)
	up.Spec = resourcelock.LeaderElectionRecordToLeaseSpec(&rec)
	up, err := c.leases.Update(rctx, up, metav1.UpdateOptions{})
	if err != nil {
		c.e.log.Warn("leader: renew the Lease", "err", err)
		return
	}
	c.observe(observation{lease: up}, time.Now())
	c.v.LastRenew = start
}

// stepDown ends the term and waits for its lead to return.
func (c *campaign) stepDown(why string) {
	c.e.leader.Store(false)
	c.cancel()
	<-c.done
	c.v.Leading = false
	c.e.endTerm(why)
}

// release writes an empty holder over this replica's last version (client-go's ReleaseOnCancel),
// so that a follower acquires at once.
func (c *campaign) release() {
	if c.cur == nil || c.v.Holder != c.e.cfg.Identity {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.t.RenewDeadline)
	defer cancel()
	now := metav1.NewTime(time.Now())
	old := resourcelock.LeaseSpecToLeaderElectionRecord(&c.cur.Spec)
	rec := resourcelock.LeaderElectionRecord{LeaderTransitions: old.LeaderTransitions, LeaseDurationSeconds: 1, AcquireTime: now, RenewTime: now}
	up := c.cur.DeepCopy()
	up.Spec = resourcelock.LeaderElectionRecordToLeaseSpec(&rec)
	if _, err := c.leases.Update(ctx, up, metav1.UpdateOptions{}); err != nil {
		c.e.log.Warn("leader: release the Lease", "err", fmt.Errorf("update %s/%s: %w", c.e.cfg.Namespace, c.e.cfg.Name, err))
	}
}
