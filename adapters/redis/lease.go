package redis

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/oncely/oncely/consumer"
)

// renewBatch bounds the entries one renewal script touches.
const renewBatch = 512

// generation is the lease the deliveries received in one period share:
// its context ends when the lease of any of them was lost (another Source
// reclaimed it, or renewals failed for too long), and the runtime then
// cancels their handlers and settles none of them (consumer.LeaseContexter:
// one context for many deliveries, no goroutine each). The renewer then
// hands the others back at once (renewer.giveBack), so a lost lease delays
// its generation's entries by one reclaim, never until Close. Deliveries
// received afterwards get a new generation.
type generation struct {
	ctx    context.Context
	cancel context.CancelFunc
}

func newGeneration() *generation {
	ctx, cancel := context.WithCancel(context.Background())
	return &generation{ctx: ctx, cancel: cancel}
}

// renewer keeps the leases of a Source's unsettled deliveries: every
// Lease/3 it resets their idle time (XCLAIM … JUSTID, which leaves the
// delivery counter alone) where they are still pending with this consumer.
type renewer struct {
	s      *Source
	stopc  chan struct{}
	exited chan struct{}
	once   sync.Once

	mu     sync.Mutex
	gen    *generation
	lastOK time.Time
}

func newRenewer(s *Source) *renewer {
	r := &renewer{s: s, stopc: make(chan struct{}), exited: make(chan struct{}), gen: newGeneration(), lastOK: time.Now()}
	go r.loop()
	return r
}

// current is the generation new deliveries join.
func (r *renewer) current() *generation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gen
}

// lose ends generation g (once) and starts a new one for later
// deliveries. The unsettled deliveries of g are no longer renewed and are
// handed back at once (giveBack): their handlers are cancelled and the
// runtime settles none of them, so another Source (or this one) takes them
// on its next reclaim, without waiting for this Source's Close.
func (r *renewer) lose(g *generation, why string) {
	r.mu.Lock()
	if r.gen == g {
		r.gen = newGeneration()
	}
	r.mu.Unlock()
	if g.ctx.Err() == nil {
		r.s.log.Warn("redis: the lease of unsettled entries was lost; their handlers are cancelled and they are handed back for any Source to reclaim", "reason", why)
		g.cancel()
		r.giveBack(g)
	}
}

// giveBack stops renewing the unsettled deliveries of the lost generation
// g and releases those still pending with this consumer as Close does
// (lease ended, delivery counter unchanged): the entry whose loss ended g
// is left to the Source that holds it, and the others of g, which did
// nothing wrong, come back at once without counting an attempt. A release
// that fails leaves them unrenewed: reclaimed after Lease.
func (r *renewer) giveBack(g *generation) {
	s := r.s
	s.mu.Lock()
	var ds []*delivery
	for d := range s.open {
		if d.gen == g {
			delete(s.open, d)
			ds = append(ds, d)
		}
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Lease/3)
	defer cancel()
	if err := s.release(ctx, ds); err != nil {
		s.log.Warn("redis: handing back entries whose lease was lost failed; they are reclaimed once their lease ends", "entries", len(ds), "error", err)
	}
}

func (r *renewer) stop() {
	r.once.Do(func() { close(r.stopc) })
	<-r.exited
	r.mu.Lock()
	r.gen.cancel()
	r.mu.Unlock()
}

func (r *renewer) loop() {
	defer close(r.exited)
	t := time.NewTicker(r.s.cfg.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			r.renew()
		case <-r.stopc:
			return
		}
	}
}

// renew resets the idle time of every unsettled delivery. An entry no
// longer pending with this consumer ends its generation; so do renewals
// failing for two thirds of the lease, after which other Sources may
// reclaim any of them.
func (r *renewer) renew() {
	s := r.s
	s.mu.Lock()
	byStream := map[string][]*delivery{}
	gens := map[*generation]bool{}
	for d := range s.open {
		byStream[d.stream] = append(byStream[d.stream], d)
		gens[d.gen] = true
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Lease/3)
	defer cancel()
	ok := true
	for stream, ds := range byStream {
		for len(ds) > 0 {
			chunk := ds[:min(len(ds), renewBatch)]
			ds = ds[len(chunk):]
			// Deliveries handed back by an earlier chunk's loss are not
			// renewed: that would end the release.
			chunk = slices.DeleteFunc(chunk, func(d *delivery) bool { return d.gen.ctx.Err() != nil })
			if len(chunk) == 0 {
				continue
			}
			args := []any{s.cfg.Consumer, s.name}
			for _, d := range chunk {
				args = append(args, d.entryID)
			}
			lost, err := renewScript.Run(ctx, s.client, []string{stream}, args...).StringSlice()
			if err != nil && s.recoverGroup(ctx, err) {
				// The group was gone, and every entry pending with it.
				lost, err = make([]string, len(chunk)), nil
				for i, d := range chunk {
					lost[i] = d.entryID
				}
			}
			if err != nil {
				ok = false
				continue
			}
			gone := make(map[string]bool, len(lost))
			for _, id := range lost {
				gone[id] = true
			}
			for _, d := range chunk {
				if gone[d.entryID] && d.unsettled() {
					r.lose(d.gen, "entry "+d.entryID+" of "+stream+" is no longer pending with this consumer")
				}
			}
		}
	}
	r.mu.Lock()
	if ok {
		r.lastOK = time.Now()
	}
	late := time.Since(r.lastOK) > 2*s.cfg.Lease/3
	gens[r.gen] = true
	r.mu.Unlock()
	if late {
		// Every unsettled delivery went unrenewed, whatever its
		// generation.
		for g := range gens {
			r.lose(g, "renewals failed for two thirds of the lease")
		}
	}
}

var (
	_ consumer.Leased         = (*delivery)(nil)
	_ consumer.LeaseContexter = (*delivery)(nil)
)

// Lost is closed when the delivery's lease was lost (see generation).
func (d *delivery) Lost() <-chan struct{} { return d.gen.ctx.Done() }

// LeaseContext is done exactly when Lost is closed.
func (d *delivery) LeaseContext() context.Context { return d.gen.ctx }

// unsettled reports whether d is neither settled nor being settled.
func (d *delivery) unsettled() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return !d.settled && !d.busy
}
