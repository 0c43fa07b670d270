// Package jobs is a platform team's in-process job runner: a delayed
// scheduler and a fixed worker pool, shared by every service.
package jobs

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Job is work run later, with a context of the scheduler's own.
type Job func(ctx context.Context) error

type entry struct {
	at  time.Time
	job Job
}

// Scheduler runs jobs after a delay, on its own goroutine.
type Scheduler struct {
	mu      sync.Mutex
	pending []entry
	wake    chan struct{}
}

// NewScheduler starts the scheduler's loop.
func NewScheduler(ctx context.Context) *Scheduler {
	s := &Scheduler{wake: make(chan struct{}, 1)}
	go s.loop(ctx)
	return s
}

// After queues job to run once d has passed.
func (s *Scheduler) After(d time.Duration, job Job) {
	s.mu.Lock()
	s.pending = append(s.pending, entry{at: time.Now().Add(d), job: job})
	sort.Slice(s.pending, func(i, j int) bool { return s.pending[i].at.Before(s.pending[j].at) })
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Scheduler) loop(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.wake:
		}
		s.mu.Lock()
		var due []Job
		for len(s.pending) > 0 && !s.pending[0].at.After(time.Now()) {
			due = append(due, s.pending[0].job)
			s.pending = s.pending[1:]
		}
		s.mu.Unlock()
		for _, j := range due {
			_ = j(ctx)
		}
	}
}

// Pool runs functions on a fixed set of goroutines.
type Pool struct{ work chan func() }

// NewPool starts n workers.
func NewPool(n int) *Pool {
	p := &Pool{work: make(chan func(), 64)}
	for range n {
		go func() {
			for f := range p.work {
				f()
			}
		}()
	}
	return p
}

// Submit hands f to a worker.
func (p *Pool) Submit(f func()) { p.work <- f }
