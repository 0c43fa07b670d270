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
// Source.Receive is never called concurrently. A worker that finds no task
// waiting calls it, and then runs the first delivery itself, so a fast
// handler costs no hand-off between goroutines; while every worker has been
// busy for a millisecond with none finishing, Receive runs beside them
// until MaxInFlight deliveries are in flight, so slow handlers find their
// next deliveries already received.
type Consumer struct {
	cfg     Config
	src     Source
	handler Handler
	log     *slog.Logger
	caps    Capabilities

	window *window
	epoch  time.Time // with a monotonic reading: handler timing reads only that clock

	// Guarded by mu: the lanes, the run queue of tasks, the idle workers
	// waiting on work for it, and the intake role.
	mu         sync.Mutex
	lanes      laneMap
	freeLanes  []*lane // lanes no longer used, for reuse
	runq       []task  // runq[runqHead:] waits for a worker
	runqHead   int
	work       sync.Cond
	idle       int  // workers waiting on work
	quitting   bool // set after the drain: idle workers exit
	receiving  bool // a worker holds the intake role
	intakeOff  bool // intake stopped for good: no Receive starts
	intakeErr  error
	intakeIdle sync.Cond // broadcast when receiving turns false

	prefetchTimer *time.Timer // runs prefetch; stopped when not armed
	prefetchArmed bool        // guarded by mu
	armedAt       uint64      // completed when prefetch was armed
	completed     uint64      // deliveries processed; guarded by mu

	// Owned by the worker holding the intake role.
	intakeCtx  context.Context // cancelled when the stop begins
	intakeDone chan struct{}   // closed when intake stops by itself
	excess     []Delivery      // returned beyond what was asked, not dispatched yet
	failures   int             // consecutive Receive failures

	breaker  breaker
	inflight sync.WaitGroup

	baseCtx    context.Context // never cancelled by the stop sequence; carries values
	hardCtx    context.Context // cancelled on hard stop
	hardCancel context.CancelFunc
	stopOnce   sync.Once
	stopCh     chan struct{}
	hardOnce   sync.Once
	hardCh     chan struct{} // closed by hardStop; cancels hardCtx
	closed     atomic.Bool   // source closed: no settlement may follow
	running    atomic.Bool
	done       chan struct{}
	runErr     error
}

// lane is the deliveries of one key (or partition) handled one after another.
// A lane is in Consumer.lanes exactly while a worker runs it or its task waits
// in the run queue; its queue holds the deliveries behind the running one.
type lane struct {
	id    laneID
	queue []Delivery
	head  int // queue[head:] is waiting
}

// task is a delivery for a worker, with its lane (nil when unordered).
type task struct {
	l *lane
	d Delivery
}

// laneMap holds the busy lanes, in one map per kind of laneID so that
// lookups use the runtime's fast string and int32 map paths.
type laneMap struct {
	byKey       map[string]*lane
	byPartition map[int32]*lane
}

func (m *laneMap) get(id laneID) *lane {
	if id.byKey {
		return m.byKey[id.key]
	}
	return m.byPartition[id.partition]
}

func (m *laneMap) set(id laneID, l *lane) {
	if id.byKey {
		m.byKey[id.key] = l
	} else {
		m.byPartition[id.partition] = l
	}
}

func (m *laneMap) remove(id laneID) {
	if id.byKey {
		delete(m.byKey, id.key)
	} else {
		delete(m.byPartition, id.partition)
	}
}

// laneID names a lane without building a string per delivery.
type laneID struct {
	key       string
	partition int32
	byKey     bool
}

// New returns a Consumer that feeds src's deliveries to h wrapped in mws
// (mws[0] outermost), with Recover always outermost. It validates cfg against
// the defaults and src's capabilities and reports every problem at once.
func New(src Source, h Handler, cfg Config, mws ...Middleware) (*Consumer, error) {
	if src == nil {
		return nil, errors.New("oncely: nil Source")
	}
	if h == nil {
		return nil, errors.New("oncely: nil Handler")
	}
	cfg = cfg.withDefaults()
	caps := src.Capabilities()
	if err := cfg.validate(caps); err != nil {
		return nil, err
	}
	c := &Consumer{
		cfg:     cfg,
		src:     src,
		handler: Chain(h, append([]Middleware{Recover}, mws...)...),
		log:     cfg.Logger.With("consumer", cfg.Name, "broker", caps.Broker),
		caps:    caps,
		window:  newWindow(cfg.MaxInFlight, cfg.ReceiveBatch, cfg.Concurrency),
		epoch:   time.Now(),
		lanes:   laneMap{byKey: make(map[string]*lane), byPartition: make(map[int32]*lane)},
		stopCh:  make(chan struct{}),
		hardCh:  make(chan struct{}),
		done:    make(chan struct{}),

		intakeDone: make(chan struct{}),
	}
	c.work.L = &c.mu
	c.intakeIdle.L = &c.mu
	c.breaker.init(cfg.BreakerThreshold, cfg.Observer)
	return c, nil
}

// Run consumes until ctx is done or Stop is called, then stops gracefully:
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
	c.hardCtx, c.hardCancel = context.WithCancel(c.baseCtx)
	defer c.hardCancel()
	go func() {
		select {
		case <-c.hardCh:
			c.hardCancel()
		case <-c.done:
		}
	}()

	intakeCtx, stopIntake := context.WithCancel(ctx)
	defer stopIntake()
	c.intakeCtx = intakeCtx
	c.prefetchTimer = time.AfterFunc(time.Hour, c.prefetch)
	c.prefetchTimer.Stop()
	defer c.prefetchTimer.Stop()
	var workers sync.WaitGroup
	for range c.cfg.Concurrency {
		workers.Go(c.runWorker)
	}

	select {
	case <-ctx.Done():
	case <-c.stopCh:
	case <-c.intakeDone:
	}
	c.log.Info("stopping: intake closed, draining in-flight deliveries")
	stopIntake()
	c.mu.Lock()
	c.intakeOff = true
	for c.receiving {
		c.intakeIdle.Wait()
	}
	srcErr := c.intakeErr
	c.mu.Unlock()

	err := c.drain()
	// Workers exit once the run queue is empty. After a clean drain nothing
	// is queued; after ErrStuckHandlers the stuck workers leave when their
	// handlers return, abandoning what is left (closed is set, so nothing of
	// theirs is settled).
	c.mu.Lock()
	c.quitting = true
	c.work.Broadcast()
	c.mu.Unlock()
	if err == nil {
		workers.Wait()
	}
	c.closed.Store(true)
	closeCtx, cancel := context.WithTimeout(c.baseCtx, c.cfg.SettleTimeout)
	defer cancel()
	if cerr := c.src.Close(closeCtx); cerr != nil {
		err = errors.Join(err, fmt.Errorf("oncely: closing source: %w", cerr))
	}
	if srcErr != nil && !errors.Is(srcErr, context.Canceled) && !errors.Is(srcErr, ErrSourceClosed) {
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
	c.hardOnce.Do(func() { close(c.hardCh) })
}

// drain waits for in-flight deliveries: SoftStopTimeout, then the hard stop
// and HardStopTimeout more.
func (c *Consumer) drain() error {
	all := make(chan struct{})
	go func() { c.inflight.Wait(); close(all) }()
	soft := time.NewTimer(c.cfg.SoftStopTimeout)
	defer soft.Stop()
	select {
	case <-all:
		return nil
	case <-c.hardCtx.Done():
	case <-soft.C:
		c.log.Warn("soft stop timed out; cancelling handlers", "timeout", c.cfg.SoftStopTimeout)
	}
	c.hardStop()
	hard := time.NewTimer(c.cfg.HardStopTimeout)
	defer hard.Stop()
	select {
	case <-all:
		return nil
	case <-hard.C:
		c.log.Error("handlers ignored cancellation; their deliveries stay unsettled", "timeout", c.cfg.HardStopTimeout)
		return ErrStuckHandlers
	}
}

// intake is one turn of the intake role, which a worker takes when the run
// queue is empty: it waits while the breaker is open and for room in the
// window, receives and dispatches. Deliveries a source returned beyond what
// was asked are dispatched on later turns, as room frees. The role's holder
// runs no lane, so every delivery in flight is on a lane another worker
// runs, and waiting for room cannot deadlock. intake returns an error only
// when intake must stop for good.
func (c *Consumer) intake(ctx context.Context) error {
	if err := c.breaker.wait(ctx); err != nil {
		return err
	}
	if len(c.excess) > 0 {
		// The source returned more than asked (an adapter bug): wait for
		// room so in-flight stays bounded.
		n, err := c.window.acquireN(ctx, 1, int64(len(c.excess)))
		if err != nil {
			return err // unsettled; the source redelivers them after Close
		}
		c.dispatch(c.excess[:n])
		clear(c.excess[:n])
		if c.excess = c.excess[n:]; len(c.excess) == 0 {
			c.excess = nil
		}
		return nil
	}
	n, err := c.window.acquire(ctx, c.cfg.ReceiveBatch)
	if err != nil {
		return err
	}
	ds, err := c.src.Receive(ctx, n)
	c.window.giveBack(n - len(ds))
	c.dispatch(ds[:min(n, len(ds))])
	if len(ds) > n {
		c.excess = append(c.excess, ds[n:]...)
	}
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, ErrSourceClosed) {
			return err
		}
		c.failures++
		d := c.cfg.OutageBackoff.Delay(c.failures, nil)
		c.log.Error("receive failed; retrying", "error", err, "in", d)
		if !sleep(ctx, d) {
			return ctx.Err()
		}
		return nil
	}
	c.failures = 0
	return nil
}

// laneID returns the lane of m, and false when m runs on a lane of its own.
func (c *Consumer) laneID(m *Message) (laneID, bool) {
	switch {
	case c.cfg.Ordering == Unordered:
		return laneID{}, false
	case c.cfg.Ordering == OrderByPartition || m.Key == "":
		return laneID{partition: m.Partition}, true
	}
	return laneID{key: m.Key, byKey: true}, true
}

// dispatch hands ds, whose window slots are taken, to the workers: a
// delivery whose lane is busy queues behind it, any other becomes a task in
// the run queue. It takes the lock once per batch. Only the intake role's
// holder dispatches; it takes a task next and wakes an idle worker then
// (see nextTaskLocked).
func (c *Consumer) dispatch(ds []Delivery) {
	if len(ds) == 0 {
		return
	}
	c.inflight.Add(len(ds))
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range ds {
		id, ordered := c.laneID(d.Message())
		if !ordered {
			c.runq = append(c.runq, task{d: d})
			continue
		}
		if l := c.lanes.get(id); l != nil {
			l.queue = append(l.queue, d)
			continue
		}
		var l *lane
		if n := len(c.freeLanes); n > 0 {
			l = c.freeLanes[n-1]
			c.freeLanes[n-1] = nil
			c.freeLanes = c.freeLanes[:n-1]
		} else {
			l = &lane{}
		}
		l.id = id
		c.lanes.set(id, l)
		c.runq = append(c.runq, task{l: l, d: d})
	}
}

// nextTaskLocked waits for a task; it reports false when the consumer is
// quitting and no task is left. While the run queue is empty and no other
// worker holds the intake role, the worker takes it and receives itself, so
// a delivery usually runs on the goroutine that received it. c.mu must be
// held; it is released during intake.
func (c *Consumer) nextTaskLocked() (task, bool) {
	for c.runqHead == len(c.runq) {
		if c.quitting {
			return task{}, false
		}
		if !c.receiving && !c.intakeOff {
			c.intakeTurnLocked()
			continue
		}
		c.idle++
		c.work.Wait()
		c.idle--
	}
	t := c.runq[c.runqHead]
	c.runq[c.runqHead] = task{}
	c.runqHead++
	switch {
	case c.runqHead == len(c.runq):
		c.runq, c.runqHead = c.runq[:0], 0
	case c.runqHead >= 1024 && 2*c.runqHead >= len(c.runq):
		n := copy(c.runq, c.runq[c.runqHead:])
		clear(c.runq[n:])
		c.runq, c.runqHead = c.runq[:n], 0
	}
	// Wake one idle worker for the next task, or to take the free intake
	// role while this one runs; it wakes the next in turn, so a batch
	// wakes workers one by one as long as work is left for them.
	if c.idle > 0 && (c.runqHead < len(c.runq) || (!c.receiving && !c.intakeOff)) {
		c.work.Signal()
	}
	c.armPrefetchLocked()
	return t, true
}

// intakeTurnLocked takes the intake role for one turn of intake; c.mu must
// be held, and is released during the turn.
func (c *Consumer) intakeTurnLocked() {
	c.receiving = true
	c.mu.Unlock()
	err := c.intake(c.intakeCtx)
	c.mu.Lock()
	c.receiving = false
	c.intakeIdle.Broadcast()
	if err != nil {
		if c.intakeErr == nil {
			c.intakeErr = err
		}
		if !c.intakeOff {
			c.intakeOff = true
			close(c.intakeDone)
		}
	}
}

// prefetchDelay is how long every worker must have been busy, with the run
// queue empty, before intake runs beside them to fill the window.
const prefetchDelay = time.Millisecond

// armPrefetchLocked schedules prefetch when every worker is busy and no
// intake runs; c.mu must be held. The run queue may hold tasks: when every
// worker is blocked in a handler they wait there too, and only prefetch can
// fill the rest of the window (prefetch checks that nothing completed since
// it was armed before it receives beside a non-empty run queue).
func (c *Consumer) armPrefetchLocked() {
	if c.idle == 0 && !c.prefetchArmed && !c.receiving && !c.intakeOff {
		c.prefetchArmed, c.armedAt = true, c.completed
		c.prefetchTimer.Reset(prefetchDelay)
	}
}

// prefetch fills the window while every worker is busy with a handler
// slower than prefetchDelay, as MaxInFlight promises: it takes the intake
// role from the timer's goroutine and receives while no delivery completes,
// until a worker is idle (which then takes the role itself) or the window is
// full. When deliveries complete meanwhile, handlers are fast: a worker soon
// finds the run queue empty and receives itself, on its own goroutine, and
// prefetch at most refills an empty run queue.
func (c *Consumer) prefetch() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.prefetchArmed = false
	for c.idle == 0 && !c.receiving && !c.intakeOff && !c.quitting && c.window.room() &&
		(c.runqHead == len(c.runq) || c.completed == c.armedAt) {
		c.intakeTurnLocked()
	}
	if c.idle > 0 && (c.runqHead < len(c.runq) || (!c.receiving && !c.intakeOff)) {
		c.work.Signal() // for the tasks dispatched, or to take the intake role
	}
}

// runWorker runs tasks. A worker keeps a lane until it is empty, so a lane's
// deliveries run one after another on one goroutine, and each delivery costs
// one lock round (which also picks the next task).
func (c *Consumer) runWorker() {
	w := &worker{}
	w.a.actx.Context = c.hardCtx
	w.a.sctx.Context = c.baseCtx
	defer w.close()
	c.mu.Lock()
	for {
		t, ok := c.nextTaskLocked()
		if !ok {
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		for d := t.d; ; {
			c.process(w, d)
			c.window.release(1)
			c.inflight.Done()
			c.mu.Lock()
			c.completed++
			if t.l == nil {
				break
			}
			if d = t.l.pop(); d != nil {
				c.mu.Unlock()
				continue
			}
			c.lanes.remove(t.l.id)
			if cap(t.l.queue) <= 64 {
				*t.l = lane{queue: t.l.queue[:0]}
				c.freeLanes = append(c.freeLanes, t.l)
			}
			break
		}
	}
}

// pop removes the lane's next delivery, or returns nil; c.mu must be held.
func (l *lane) pop() Delivery {
	if l.head == len(l.queue) {
		return nil
	}
	d := l.queue[l.head]
	l.queue[l.head] = nil
	l.head++
	return d
}

// process runs one delivery to its settlement, or abandons it. A delivery
// without a lease runs on w's reused attempt state (no allocation).
func (c *Consumer) process(w *worker, d Delivery) {
	msg := d.Message()
	if c.hardCtx.Err() != nil {
		c.observe(Event{Message: msg, Outcome: OutcomeAbandoned, Err: c.hardCtx.Err()})
		return
	}
	switch {
	case msg.ID == "":
		c.deadLetter(d, msg, ReasonMissingID, errors.New("message has no ID"), 0)
		return
	case len(msg.ID) > c.cfg.MaxIDLength:
		c.deadLetter(d, msg, ReasonInvalidID, fmt.Errorf("message ID is %d bytes, over the %d-byte limit", len(msg.ID), c.cfg.MaxIDLength), 0)
		return
	}

	if msg.Attempt < 1 {
		msg.Attempt = 1
	}
	var hctx context.Context // nil: w's attempt state, under c.hardCtx
	var shared *attempt      // the lease's attempt state on w, when shared
	var lost <-chan struct{}
	if l, ok := d.(Leased); ok {
		lost = l.Lost()
		if lc, ok := d.(LeaseContexter); ok {
			// Deliveries of one lease (a Kafka partition) share a context
			// that ends with the lease or the hard stop; no goroutine or
			// allocation per delivery.
			var ls *leaseState
			shared, ls = w.leaseAttempt(c, lc.LeaseContext())
			if ls != nil {
				defer ls.release()
			}
			hctx = shared.actx.Context
		} else {
			var cancel context.CancelFunc
			hctx, cancel = context.WithCancel(c.hardCtx)
			defer cancel()
			go func() {
				select {
				case <-lost:
					cancel()
				case <-hctx.Done():
				}
			}()
		}
	}
	isLost := func() bool {
		select {
		case <-lost:
			return true
		default:
			return false
		}
	}

	timed := c.cfg.Observer != nil
	for outage := 1; ; outage++ {
		if isLost() {
			// The lease went before the handler (re)started: running it
			// would let this delivery overtake the one that caused the loss.
			c.observe(Event{Message: msg, Outcome: OutcomeAbandoned, Err: errors.New("broker lease lost")})
			return
		}
		// The attempt's context and its ack's settlement context: w's or
		// w's for the lease, reset; or, under a lease without a
		// LeaseContext, one fresh allocation.
		a := &w.a
		switch {
		case shared != nil:
			a = shared
			fallthrough
		case hctx == nil:
			a.actx.state.duplicate.Store(false)
		default:
			a = &attempt{actx: attemptCtx{Context: hctx}, sctx: settleCtx{Context: c.baseCtx}}
		}
		actx := &a.actx
		// The clock is read only to time the handler for the Observer,
		// and then only the monotonic clock (time.Since of a time.Time
		// with a monotonic reading reads nothing else).
		var start time.Duration
		if timed {
			start = time.Since(c.epoch)
		}
		err := c.handler.Handle(actx, msg)
		var dur time.Duration
		if timed {
			dur = time.Since(c.epoch) - start
		}
		if isLost() {
			c.observe(Event{Message: msg, Outcome: OutcomeAbandoned, Err: errors.New("broker lease lost"), Duration: dur})
			return
		}
		if err == nil {
			c.breaker.success()
			outcome := OutcomeProcessed
			if IsDuplicate(actx) {
				outcome = OutcomeDuplicate
			}
			if c.settle(d, msg, settlement{what: "ack", ctx: &a.sctx}) {
				c.observe(Event{Message: msg, Outcome: outcome, Duration: dur})
			}
			return
		}
		if c.hardCtx.Err() != nil {
			c.observe(Event{Message: msg, Outcome: OutcomeAbandoned, Err: err, Duration: dur})
			return
		}
		switch c.cfg.Classify(err) {
		case Outage:
			c.breaker.failure()
			wait := c.cfg.OutageBackoff.Delay(outage, nil)
			c.log.Warn("outage: holding delivery and trying again", "message_id", msg.ID, "error", err, "in", wait)
			c.observe(Event{Message: msg, Outcome: OutcomeFailed, Err: err, Duration: dur})
			if !sleep(c.hardCtx, wait) {
				c.observe(Event{Message: msg, Outcome: OutcomeAbandoned, Err: err})
				return
			}
			continue
		case Fatal:
			c.breaker.success()
			c.deadLetter(d, msg, ReasonPermanent, err, dur)
			return
		default:
			c.breaker.success()
			if c.cfg.Retry.Exhausted(msg.Attempt) {
				reason := ReasonExhausted
				var pe *PanicError
				if errors.As(err, &pe) {
					reason = ReasonPanic
				}
				c.deadLetter(d, msg, reason, err, dur)
				return
			}
			c.retry(d, msg, err, dur)
			return
		}
	}
}

func (c *Consumer) retry(d Delivery, msg *Message, err error, dur time.Duration) {
	delay := c.cfg.Retry.Delay(msg.Attempt, nil)
	var ra *RetryAfterError
	if errors.As(err, &ra) && ra.After > delay {
		delay = ra.After
	}
	now := time.Now()
	h := FailureHeaders(msg, Failure{Consumer: c.cfg.Name, Err: err, NextAttempt: msg.Attempt + 1, NotBefore: now.Add(delay), At: now})
	c.log.Info("retrying", "message_id", msg.ID, "attempt", msg.Attempt, "in", delay, "error", err)
	if c.settle(d, msg, settlement{what: "retry", after: delay, headers: h}) {
		c.observe(Event{Message: msg, Outcome: OutcomeRetried, Err: err, RetryAfter: delay, Duration: dur})
	}
}

func (c *Consumer) deadLetter(d Delivery, msg *Message, reason string, err error, dur time.Duration) {
	h := FailureHeaders(msg, Failure{Consumer: c.cfg.Name, Err: err, Reason: reason, NextAttempt: msg.Attempt, At: time.Now()})
	c.log.Warn("dead-lettering", "message_id", msg.ID, "attempt", msg.Attempt, "reason", reason, "error", err)
	if c.settle(d, msg, settlement{what: "dead-letter", headers: h}) {
		c.observe(Event{Message: msg, Outcome: OutcomeDeadLettered, Err: err, Reason: reason, Duration: dur})
	}
}

// settlement is one way to settle a delivery: "ack", "retry" (after,
// headers) or "dead-letter" (headers).
type settlement struct {
	what    string
	after   time.Duration
	headers map[string]string
	ctx     *settleCtx // for the first try (Context set), or nil
}

// attempt is one handler call's context and the settlement context of its
// ack, allocated together.
type attempt struct {
	actx attemptCtx
	sctx settleCtx
}

// worker is one worker goroutine's state, reused across its deliveries.
type worker struct {
	a      attempt // contexts under c.hardCtx and c.baseCtx
	leases map[context.Context]*leaseState
}

// leaseState is a worker's attempt state for the deliveries of one lease:
// its handler context is cancelled when the lease ends or on hard stop.
type leaseState struct {
	a    attempt
	stop func() bool // unhooks the cancel from the lease
	end  context.CancelFunc
}

// maxLeases bounds a worker's cached lease states; done ones are pruned
// when it is reached.
const maxLeases = 256

// leaseAttempt returns w's attempt state for deliveries leased by lease,
// creating it on first use. When w's cache is full of live leases, the state
// is not cached and returned as owned too: the caller releases it.
func (w *worker) leaseAttempt(c *Consumer, lease context.Context) (a *attempt, owned *leaseState) {
	if ls := w.leases[lease]; ls != nil {
		return &ls.a, nil
	}
	if w.leases == nil {
		w.leases = make(map[context.Context]*leaseState)
	}
	if len(w.leases) >= maxLeases {
		for k, ls := range w.leases {
			if k.Err() != nil {
				ls.release()
				delete(w.leases, k)
			}
		}
	}
	hctx, cancel := context.WithCancel(c.hardCtx)
	ls := &leaseState{end: cancel, stop: context.AfterFunc(lease, cancel)}
	ls.a.actx.Context, ls.a.sctx.Context = hctx, c.baseCtx
	if len(w.leases) >= maxLeases {
		return &ls.a, ls
	}
	w.leases[lease] = ls
	return &ls.a, nil
}

func (ls *leaseState) release() {
	ls.stop()
	ls.end()
}

// close releases w's lease states.
func (w *worker) close() {
	for _, ls := range w.leases {
		ls.release()
	}
	clear(w.leases)
}

func (s settlement) do(ctx context.Context, d Delivery) error {
	switch s.what {
	case "retry":
		return d.Retry(ctx, s.after, s.headers)
	case "dead-letter":
		return d.DeadLetter(ctx, s.headers)
	}
	return d.Ack(ctx)
}

// settle performs s until it succeeds, backing off between tries; a failing
// settlement is a broker outage and counts towards the breaker. It gives up
// (leaving the delivery unsettled) only on hard stop.
func (c *Consumer) settle(d Delivery, msg *Message, s settlement) bool {
	what := s.what
	for try := 1; ; try++ {
		if c.closed.Load() {
			c.observe(Event{Message: msg, Outcome: OutcomeAbandoned, Err: fmt.Errorf("%s: %w", what, ErrSourceClosed)})
			return false
		}
		ctx := s.ctx
		if ctx == nil || try > 1 {
			ctx = newSettleCtx(c.baseCtx, c.cfg.SettleTimeout)
		} else {
			ctx.init(c.cfg.SettleTimeout, time.Time{})
		}
		err := s.do(ctx, d)
		ctx.cancel()
		if err == nil {
			return true
		}
		if errors.Is(err, ErrAlreadySettled) {
			c.log.Error("delivery settled twice; this is an adapter bug", "message_id", msg.ID, "settlement", what)
			return false
		}
		if leaseLost(d) {
			// The broker redelivers it (e.g. an AMQP channel closed); retrying
			// the settlement could never succeed.
			c.log.Warn("broker lease lost before settlement; the broker redelivers the message", "message_id", msg.ID, "settlement", what, "error", err)
			c.observe(Event{Message: msg, Outcome: OutcomeAbandoned, Err: fmt.Errorf("%s: broker lease lost: %w", what, err)})
			return false
		}
		c.breaker.failure()
		wait := c.cfg.OutageBackoff.Delay(try, nil)
		c.log.Error("settlement failed; delivery stays unsettled and is tried again", "message_id", msg.ID, "settlement", what, "error", err, "in", wait)
		c.observe(Event{Message: msg, Outcome: OutcomeFailed, Err: fmt.Errorf("%s: %w", what, err)})
		if !sleep(c.hardCtx, wait) {
			c.observe(Event{Message: msg, Outcome: OutcomeAbandoned, Err: err})
			return false
		}
	}
}

// leaseLost reports whether d is Leased and its lease is gone.
func leaseLost(d Delivery) bool {
	l, ok := d.(Leased)
	if !ok {
		return false
	}
	select {
	case <-l.Lost():
		return true
	default:
		return false
	}
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
