package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// ErrStuckHandlers is returned by Run and Stop when handlers ignored the
// hard stop's cancellation for HardStopTimeout. Their deliveries were left
// unsettled; the broker redelivers them.
var ErrStuckHandlers = errors.New("oncely: handlers did not return after hard stop")

// Consumer runs a handler over a Source: it bounds in-flight work, keeps order
// per lane, and settles every delivery at most once after the handler chain
// returns. Create one with New and run it with Run.
//
// Guarantees: at most Config.Concurrency handlers run at once; deliveries of
// one lane (see Ordering) run one at a time in the order the Source returned
// them; at most Config.MaxInFlight deliveries are received and not yet
// settled, and Source.Receive is called only while there is room for more
// and never concurrently, so that while handlers are slow the next
// deliveries are already received. Worker goroutines start only as work
// finds no idle one. A handler that turns slow holds back only the few
// deliveries its worker took with it, until an idle worker takes them over;
// it never holds back another lane beyond that.
type Consumer struct {
	cfg     Config
	src     Source
	handler Handler
	batch   BatchHandler // the chain as a BatchHandler, or nil: see processBatch
	log     *slog.Logger
	caps    Capabilities

	window *window
	epoch  time.Time // with a monotonic reading: handler timing reads only that clock

	sched   runner         // runs deliveries on workers (see schedule.go)
	workers []*worker      // each worker's attempt state, made by New
	copies  sync.WaitGroup // retry and dead-letter copies settling off the workers (see copyOffWorker)

	// Owned by the goroutine in jobs.receive (see intake).
	intakeCtx context.Context // cancelled when the stop begins
	excess    []Delivery      // returned beyond what was asked, not scheduled yet
	failures  int             // consecutive Receive failures

	breaker breaker

	baseCtx    context.Context // never cancelled by the stop sequence; carries values
	ident      ctxIdent        // baseCtx's name and broker, for attempt contexts
	hardCtx    context.Context // cancelled on hard stop
	hardCancel context.CancelFunc
	stopOnce   sync.Once
	stopCh     chan struct{}
	hardMu     sync.Mutex  // guards hardCancel's call against Run setting it
	hard       atomic.Bool // set by hardStop, which then cancels hardCtx
	closed     atomic.Bool // source closed: no settlement may follow
	running    atomic.Bool
	// claimUnderOptOut: a claim was seen although Config.Duplicates allows
	// duplicates (logged once; see witness).
	claimUnderOptOut atomic.Bool
	done             chan struct{}
	runErr           error
}

// New returns a Consumer that feeds src's deliveries to h wrapped in mws
// (mws[0] outermost), and recovers panics outside them all as Recover does.
// When h is a BatchHandler, the Consumer feeds it batches (see
// Config.BatchSize), and every middleware must return a BatchHandler too,
// or New returns ErrNotBatch.
// It validates cfg against the defaults and src's capabilities and reports
// every problem at once, and checks the chain against cfg.Duplicates: it
// returns ErrNoIdempotency for a handler with no middleware at all (given
// here or built with Chain) that is not itself Deduplicating, unless
// cfg.Duplicates is AllowDuplicates with a reason; an error for an opt-out
// beside a chain seen to deduplicate, and for a nil middleware, naming its
// position. Whatever New cannot see, the Consumer checks per message (see
// MarkClaimed). A src that is a TierLimiter is told its Retry policy's reach.
func New(src Source, h Handler, cfg Config, mws ...Middleware) (*Consumer, error) {
	if src == nil {
		return nil, errors.New("oncely: nil Source")
	}
	if h == nil {
		return nil, errors.New("oncely: nil Handler")
	}
	_, batch := h.(BatchHandler)
	caps := src.Capabilities()
	cfg = cfg.withDefaults(batch, caps.Prefetch)
	if err := cfg.validate(src, caps, batch); err != nil {
		return nil, err
	}
	log := cfg.Logger.With("consumer", cfg.Name, "broker", caps.Broker)
	chain, err := chainDuplicates(h, cfg, log, mws)
	if err != nil {
		return nil, err
	}
	if tl, ok := src.(TierLimiter); ok {
		tl.LimitTiers(cfg.Retry.Reach())
	}
	c := &Consumer{
		cfg:     cfg,
		src:     src,
		handler: chain,
		log:     log,
		caps:    caps,
		window:  newWindow(cfg.MaxInFlight, cfg.ReceiveBatch, cfg.Concurrency),
		epoch:   time.Now(),
		ident:   ctxIdent{name: cfg.Name, broker: caps.Broker},
		stopCh:  make(chan struct{}),
		done:    make(chan struct{}),
	}
	c.workers = make([]*worker, cfg.Concurrency)
	for i := range c.workers {
		c.workers[i] = &worker{a: attempt{actx: attemptCtx{ident: &c.ident}}}
	}
	c.breaker.init(cfg.BreakerThreshold, cfg.OutageBackoff, c.probe, cfg.Observer, c.log)
	if batch {
		c.batch = chain.(BatchHandler) // chainDuplicates checked it
		bs := newBatchScheduler(c.jobs(), cfg.BatchSize, cfg.BatchMaxWait, c.processBatch)
		c.window.onWait = bs.wake // a lingering batch starts: nothing more arrives
		c.sched = bs
		return c, nil
	}
	c.sched = newRunner(c.jobs(), plainByDefault)
	return c, nil
}

// jobs is the Consumer's side of the scheduling seam: intake, lanes by
// Ordering, process on the worker's attempt state, and the window.
func (c *Consumer) jobs() jobs[Delivery] {
	return jobs[Delivery]{
		workers:      c.cfg.Concurrency,
		inFlight:     c.cfg.MaxInFlight,
		receive:      func() ([]Delivery, error) { return c.intake(c.intakeCtx) },
		lane:         laneFunc(&c.cfg),
		run:          func(w int, d Delivery) { c.process(c.workers[w], d) },
		ran:          c.window.release,
		room:         c.window.room,
		waitsForRoom: c.window.waiting,
	}
}

// usePlain makes c run on the plain reference scheduler; before Run only.
// A Consumer of a BatchHandler has one scheduler only.
func (c *Consumer) usePlain() {
	if c.batch == nil {
		c.sched = newRunner(c.jobs(), true)
	}
}

// Run consumes until ctx is done (cancelled or past its deadline alike) or
// Stop is called, then stops gracefully:
// intake stops, in-flight handlers get SoftStopTimeout to finish and settle,
// then their contexts are cancelled (hard stop) and the source is closed,
// which releases every unsettled delivery back to the broker. Run returns nil
// after a clean stop, ErrStuckHandlers if handlers ignored cancellation, or
// the source's error if it failed for good. Run may be called once.
func (c *Consumer) Run(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return errors.New("oncely: Consumer.Run called twice")
	}
	defer close(c.done)
	c.baseCtx = WithBroker(WithName(context.WithoutCancel(ctx), c.cfg.Name), c.caps.Broker)
	c.hardMu.Lock()
	c.hardCtx, c.hardCancel = context.WithCancel(c.baseCtx)
	if c.hard.Load() {
		c.hardCancel() // Stop escalated before Run got here
	}
	c.hardMu.Unlock()
	defer c.hardCancel()

	probeCtx, stopProbes := context.WithCancel(c.baseCtx)
	c.breaker.start(probeCtx)
	defer c.breaker.stop()
	defer stopProbes()

	intakeCtx, stopIntake := context.WithCancel(ctx)
	defer stopIntake()
	c.intakeCtx = intakeCtx
	for _, w := range c.workers {
		w.a.actx.Context, w.a.sctx.Context = c.hardCtx, c.baseCtx
	}
	c.sched.start()

	select {
	case <-ctx.Done():
	case <-c.stopCh:
	case <-c.sched.intakeStopped():
	}
	c.log.Info("stopping: intake closed, draining in-flight deliveries")
	stopIntake()
	srcErr := c.sched.stopIntake()

	err := c.drain()
	// Workers exit once nothing is left to run. After a clean drain nothing
	// is; after ErrStuckHandlers the stuck workers leave when their
	// handlers return, abandoning what is left (closed is set, so nothing of
	// theirs is settled), and their lease states stay: the hard stop has
	// cancelled their contexts.
	c.sched.stop()
	if err == nil {
		c.sched.wait()
		c.copies.Wait()
		for _, w := range c.workers {
			w.close()
		}
	}
	c.closed.Store(true)
	closeCtx, cancel := context.WithTimeout(c.baseCtx, c.cfg.SettleTimeout)
	defer cancel()
	if cerr := c.src.Close(closeCtx); cerr != nil {
		err = errors.Join(err, fmt.Errorf("oncely: closing source: %w", cerr))
	}
	// Intake ended by the stop, by ctx (cancelled or past its deadline) or by
	// Close is a clean stop, not the source's failure.
	if srcErr != nil && ctx.Err() == nil && !errors.Is(srcErr, context.Canceled) && !errors.Is(srcErr, ErrSourceClosed) {
		err = errors.Join(srcErr, err)
	}
	c.runErr = err
	c.log.Info("stopped", "error", err)
	return err
}

// Stop asks a running Consumer to stop gracefully and waits until Run returns.
// When ctx is done before that, Stop escalates to the hard stop at once
// (handler contexts are cancelled). It returns Run's result.
func (c *Consumer) Stop(ctx context.Context) error {
	c.stopOnce.Do(func() { close(c.stopCh) })
	if !c.running.Load() {
		return nil
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		c.hardStop()
		<-c.done
	}
	return c.runErr
}

// Paused reports whether the breaker has paused intake after consecutive
// outage failures. Health checks report not-ready while it is true.
func (c *Consumer) Paused() bool { return c.breaker.isOpen() }

func (c *Consumer) hardStop() {
	c.hardMu.Lock()
	defer c.hardMu.Unlock()
	if !c.hard.Swap(true) && c.hardCancel != nil {
		c.hardCancel()
	}
}

// drain waits for in-flight deliveries: SoftStopTimeout, then the hard stop
// and HardStopTimeout more. Intake must have stopped: the deliveries in
// flight are then those holding window slots, each released once a worker
// has run it (see ranLocking).
func (c *Consumer) drain() error {
	if c.window.idle() {
		return nil
	}
	soft, cancel := context.WithTimeout(c.hardCtx, c.cfg.SoftStopTimeout)
	defer cancel()
	if c.window.waitIdle(soft) {
		return nil
	}
	if c.hardCtx.Err() == nil {
		c.log.Warn("soft stop timed out; cancelling handlers", "timeout", c.cfg.SoftStopTimeout.String())
	}
	c.hardStop()
	hard, cancel := context.WithTimeout(c.baseCtx, c.cfg.HardStopTimeout)
	defer cancel()
	if c.window.waitIdle(hard) {
		return nil
	}
	c.log.Error("handlers ignored cancellation; their deliveries stay unsettled", "timeout", c.cfg.HardStopTimeout.String())
	return ErrStuckHandlers
}

func (c *Consumer) observe(ev Event) {
	if c.cfg.Observer == nil {
		return
	}
	ev.Consumer = c.cfg.Name
	c.cfg.Observer.Settled(c.baseCtx, ev)
}

// sleep waits d or until ctx is done; it reports whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
