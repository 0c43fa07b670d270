package consumer

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
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
// Worker goroutines start as work finds no idle worker, up to
// Config.Concurrency: a consumer whose handlers keep up on one goroutine
// runs one. Source.Receive is never called concurrently. A worker that finds
// no task waiting calls it, and then runs the received deliveries itself, so
// fast handlers cost no hand-off between goroutines; when nothing else was
// in flight it runs them all, in order, without looking up their lanes,
// until another worker would run a delivery beside them. Idle workers are
// woken for waiting deliveries once those have waited helpDelay (from then
// on at once, while handlers stay slow); while every worker has been busy
// for prefetchDelay with none finishing, Receive runs beside them until
// MaxInFlight deliveries are in flight, so slow handlers find their next
// deliveries already received.
type Consumer struct {
	cfg     Config
	src     Source
	handler Handler
	log     *slog.Logger
	caps    Capabilities

	window *window
	epoch  time.Time // with a monotonic reading: handler timing reads only that clock

	lanes laneTable // nil slots when deliveries are not ordered

	// Guarded by mu: the lanes' state, the run queue of tasks, the idle
	// workers waiting on work for it, and the intake role.
	mu         sync.Mutex
	runq       []task // runq[runqHead:] waits for a worker
	runqHead   int
	solo       *worker // runs a batch without lanes (see dispatchLocked)
	soloRuns   uint64  // solo runs started; the current one's number
	work       sync.Cond
	idle       int  // workers waiting on work
	quitting   bool // set after the drain: idle workers exit
	receiving  bool // a worker holds the intake role
	intakeOff  bool // intake stopped for good: no Receive starts
	intakeErr  error
	intakeIdle sync.Cond // broadcast when receiving turns false

	workers    []*worker   // made by New
	started    int         // workers whose goroutines started (see wakeLocked)
	helpTimer  *time.Timer // runs help; stopped when not armed
	helpArmed  bool
	spreading  bool      // handlers are slow: wake idle workers for tasks at once
	armedAt    uint64    // completed when help was armed
	armedUntil uint64    // dequeued once the tasks waiting when help was armed are taken
	armedSolo  uint64    // the solo run when help was armed, or 0
	armedNext  int32     // its worker's next claim then
	armedTime  time.Time // then, when armedSolo is set
	completed  uint64    // deliveries processed
	dequeued   uint64    // tasks taken from the run queue

	// Owned by the worker holding the intake role.
	intakeCtx  context.Context // cancelled when the stop begins
	intakeDone chan struct{}   // closed when intake stops by itself
	excess     []Delivery      // returned beyond what was asked, not dispatched yet
	failures   int             // consecutive Receive failures

	breaker    breaker
	goroutines sync.WaitGroup // the started workers

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
	done       chan struct{}
	runErr     error
}

// lane is the deliveries of one ordering key, or one partition, handled one
// after another. A lane is busy while a worker runs one of its deliveries or
// its task waits in the run queue; its queue holds the deliveries behind
// that one. An idle lane stays in the lane table for the next key that
// hashes to its slot. Guarded by Consumer.mu.
type lane struct {
	key       string // the ordering key, when busy and byKey
	partition int32  // the partition, when busy and not byKey
	byKey     bool
	busy      bool  // see above; an idle lane has no key
	held      int   // deliveries of a solo run's last claim that hold it (see endSoloLocked)
	next      *lane // the next lane in the slot's chain
	queue     []Delivery
	head      int // queue[head:] is waiting
}

// task is a delivery for a worker, with its lane (nil when unordered).
type task struct {
	l *lane
	d Delivery
}

// laneTable holds the lanes in a hash table with chaining: one hash and,
// with at least 4 slots per delivery in flight, mostly a one-lane chain per
// delivery. Lanes are exact: different keys never share a busy lane. A
// released lane stays, idle, in its slot's chain, and the next key that
// hashes to the slot takes it: no allocation, linking or unlinking per
// delivery. A slot's chain holds at most as many lanes as were busy in it
// at once.
type laneTable struct {
	slots []*lane
	seed  maphash.Seed
	busy  int // busy lanes
}

// laneSlotsMax bounds the lane table's slots (512 KiB).
const laneSlotsMax = 1 << 16

func newLaneTable(maxInFlight int) laneTable {
	n := 64
	for n < 4*maxInFlight && n < laneSlotsMax {
		n <<= 1
	}
	return laneTable{slots: make([]*lane, n), seed: maphash.MakeSeed()}
}

// lookup returns the busy lane of a key (byKey) or partition and true, or
// a lane made busy for it and false.
func (t *laneTable) lookup(byKey bool, key string, partition int32) (*lane, bool) {
	var h uint64
	if byKey {
		partition = 0
		h = maphash.String(t.seed, key)
	} else {
		// A multiplication by an odd constant mixes the partition's bits
		// and is one-to-one modulo the table's size.
		h = uint64(uint32(partition)) * 0x9e3779b97f4a7c15
	}
	slot := &t.slots[h&uint64(len(t.slots)-1)]
	var idle *lane
	for l := *slot; l != nil; l = l.next {
		switch {
		case !l.busy:
			if idle == nil {
				idle = l
			}
		case l.byKey == byKey && l.partition == partition && l.key == key:
			return l, true
		}
	}
	if idle == nil {
		idle = &lane{next: *slot}
		*slot = idle
	}
	idle.key, idle.partition, idle.byKey, idle.busy = key, partition, byKey, true
	t.busy++
	return idle, false
}

// release makes l, whose queue is empty, idle.
func (t *laneTable) release(l *lane) {
	l.busy = false
	t.busy--
	if l.byKey {
		l.key = "" // keeps no message's memory alive
	}
	if l.head > 0 {
		l.queue, l.head = l.queue[:0], 0
		if cap(l.queue) > 64 {
			l.queue = nil
		}
	}
}

// New returns a Consumer that feeds src's deliveries to h wrapped in mws
// (mws[0] outermost), and recovers panics outside them all as Recover does.
// It validates cfg against the defaults and src's capabilities and reports
// every problem at once.
func New(src Source, h Handler, cfg Config, mws ...Middleware) (*Consumer, error) {
	if src == nil {
		return nil, errors.New("oncely: nil Source")
	}
	if h == nil {
		return nil, errors.New("oncely: nil Handler")
	}
	cfg = cfg.withDefaults()
	caps := src.Capabilities()
	if err := cfg.validate(src, caps); err != nil {
		return nil, err
	}
	c := &Consumer{
		cfg:     cfg,
		src:     src,
		handler: Chain(h, mws...),
		log:     cfg.Logger.With("consumer", cfg.Name, "broker", caps.Broker),
		caps:    caps,
		window:  newWindow(cfg.MaxInFlight, cfg.ReceiveBatch, cfg.Concurrency),
		epoch:   time.Now(),
		ident:   ctxIdent{name: cfg.Name, broker: caps.Broker},
		stopCh:  make(chan struct{}),
		done:    make(chan struct{}),

		intakeDone: make(chan struct{}),
	}
	// One worker runs deliveries in arrival order: it needs no lanes.
	if cfg.Ordering != Unordered && cfg.Concurrency > 1 {
		c.lanes = newLaneTable(cfg.MaxInFlight)
	}
	c.work.L = &c.mu
	c.intakeIdle.L = &c.mu
	// Made here, not in Run, so that Run's start allocates little: its
	// contexts, and then one goroutine.
	c.helpTimer = time.AfterFunc(time.Hour, c.help)
	c.helpTimer.Stop()
	c.workers = make([]*worker, cfg.Concurrency)
	for i := range c.workers {
		c.workers[i] = &worker{run: make([]task, 0, grabMax), a: attempt{actx: attemptCtx{ident: &c.ident}}}
	}
	c.breaker.init(cfg.BreakerThreshold, cfg.OutageBackoff, c.probe, cfg.Observer, c.log)
	return c, nil
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
	defer c.helpTimer.Stop()
	for _, w := range c.workers {
		w.a.actx.Context, w.a.sctx.Context = c.hardCtx, c.baseCtx
	}
	c.mu.Lock()
	c.startWorkerLocked() // the rest start as work finds no idle worker
	c.mu.Unlock()

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
		c.goroutines.Wait()
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

// intake is one turn of the intake role, which a worker takes when the run
// queue is empty: it waits while the breaker is open and for room in the
// window, and receives. It returns the deliveries to dispatch, whose window
// slots are taken. Deliveries a source returned beyond what was asked are
// returned on later turns, as room frees. The role's holder runs no lane, so
// every delivery in flight is on a lane another worker runs, and waiting for
// room cannot deadlock. intake returns an error only when intake must stop
// for good.
func (c *Consumer) intake(ctx context.Context) ([]Delivery, error) {
	if err := c.breaker.wait(ctx); err != nil {
		return nil, err
	}
	if len(c.excess) > 0 {
		// The source returned more than asked (an adapter bug): wait for
		// room so in-flight stays bounded.
		n, err := c.window.acquireN(ctx, 1, int64(len(c.excess)))
		if err != nil {
			return nil, err // unsettled; the source redelivers them after Close
		}
		ds := c.excess[:n:n]
		if c.excess = c.excess[n:]; len(c.excess) == 0 {
			c.excess = nil
		}
		return ds, nil
	}
	n, err := c.window.acquire(ctx, c.cfg.ReceiveBatch)
	if err != nil {
		return nil, err
	}
	ds, err := c.src.Receive(ctx, n)
	c.window.giveBack(n - len(ds))
	if len(ds) > n {
		c.excess = append(c.excess, ds[n:]...)
		ds = ds[:n]
	}
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, ErrSourceClosed) {
			return ds, err
		}
		c.failures++
		d := c.cfg.OutageBackoff.Delay(c.failures, nil)
		c.log.Error("receive failed; retrying", "error", err, "in", d.String())
		if !sleep(ctx, d) {
			return ds, ctx.Err()
		}
		return ds, nil
	}
	c.failures = 0
	// The breaker may have opened while Receive waited: hold what it
	// returned until it closes, so no batch passes an open breaker.
	if err := c.breaker.wait(ctx); err != nil {
		return ds, err
	}
	return ds, nil
}

// laneOf returns the lane of m and whether it was busy already; c.lanes
// must exist and c.mu be held.
func (c *Consumer) laneOf(m *Message) (*lane, bool) {
	if c.cfg.Ordering == OrderByPartition || m.Key == "" {
		return c.lanes.lookup(false, "", m.Partition)
	}
	return c.lanes.lookup(true, m.Key, 0)
}

// dispatchLocked hands ds, whose window slots are taken, to the workers, and
// returns the tasks for w (nil: none). When nothing else is in flight and
// handlers are fast, w runs all of ds as a solo run (see runSoloLocked): in
// arrival order, on w alone, without lanes, until another worker would run a
// delivery beside it (endSoloLocked). Otherwise a delivery whose lane is
// busy queues behind it, and any other becomes a task: for w up to grabMax
// (at most one while handlers are slow), else in the run queue. c.mu must be
// held.
func (c *Consumer) dispatchLocked(ds []Delivery, w *worker) []task {
	if c.solo != nil {
		c.endSoloLocked() // another worker's solo run: it gets lanes first
	}
	if w == nil {
		for _, d := range ds {
			if t, ok := c.placeLocked(d); ok {
				c.runq = append(c.runq, t)
			}
		}
		return nil
	}
	if c.lanes.slots != nil && c.lanes.busy == 0 && !c.spreading && len(ds) > 0 {
		// No lane is busy: nothing else is in flight. w runs ds itself,
		// as received: no task is written per delivery.
		c.solo, c.soloRuns = w, c.soloRuns+1
		w.solo, w.end, w.seen = ds, int32(len(ds)), -1
		w.resetNext()
		return nil
	}
	own := w.run[:0]
	most := grabMax
	if c.spreading {
		most = 1
	}
	for _, d := range ds {
		t, ok := c.placeLocked(d)
		switch {
		case !ok:
		case len(own) < most:
			own = append(own, t)
		default:
			c.runq = append(c.runq, t)
		}
	}
	return own
}

// placeLocked returns d's task, with its lane made busy, or false when d
// queued behind its busy lane. c.mu must be held.
func (c *Consumer) placeLocked(d Delivery) (task, bool) {
	if c.lanes.slots == nil {
		return task{d: d}, true
	}
	l, busy := c.laneOf(d.Message())
	if busy {
		l.queue = append(l.queue, d)
		return task{}, false
	}
	return task{l: l, d: d}, true
}

// endSoloLocked ends the solo run before another worker may run a delivery
// beside it, giving its deliveries in flight what dispatch would have: the
// ones of its worker's last claim, which the worker runs (or has just run),
// hold their lanes, which the worker continues as usual once it has run
// them all; the ones it has not claimed are taken back, their lanes in
// arrival order (queued behind a busy one, or as tasks in the run queue).
// It returns how many were taken back. c.mu must be held.
func (c *Consumer) endSoloLocked() int {
	w := c.solo
	c.solo = nil
	i := w.next.Load()
	for i < w.end && !w.next.CompareAndSwap(i, w.end) {
		i = w.next.Load()
	}
	claimed := min(i, w.end)
	// No lane was busy before: a lane found busy here is held by an
	// earlier delivery of the same claim, which w runs first.
	for _, d := range w.solo[min(soloClaimStart(i), claimed):claimed] {
		l, _ := c.laneOf(d.Message())
		l.held++
		w.soloLanes = append(w.soloLanes, l)
	}
	for _, d := range w.solo[claimed:w.end] {
		if t, ok := c.placeLocked(d); ok {
			c.runq = append(c.runq, t)
		}
	}
	return int(w.end - claimed)
}

// soloClaimMax is the most deliveries a solo run's worker claims at once.
// Claims start at one delivery and double with each claim, so a solo run
// whose first deliveries are slow is taken back (see takeBackLocked) a
// delivery at a time, while a fast one costs an atomic add per 8
// deliveries instead of one per delivery (an atomic add costs more than a
// fast delivery's own runtime work). The price: a delivery that turns slow
// in a fast solo run keeps up to soloClaimMax-1 deliveries claimed behind
// it on its worker.
const soloClaimMax = 8

// soloClaimSize is the size of the solo run's claim that starts at index
// from: 1, 2, 4, then soloClaimMax, so claims end at 1, 3, 7, 15, 23, ...
func soloClaimSize(from int32) int32 { return min(from+1, soloClaimMax) }

// soloClaimStart returns where the solo run's claim that ends at index end
// (a claim boundary) starts.
func soloClaimStart(end int32) int32 {
	if end < 2*soloClaimMax {
		return max(end-1, 0) / 2
	}
	return end - soloClaimMax
}

// claimSolo claims the deliveries of w's solo run that follow index from
// (the end of w's last claim, or 0) and returns them as [from, to); from ==
// to when none is left (all claimed, or the rest taken back by
// endSoloLocked).
func (w *worker) claimSolo(from int32) (int32, int32) {
	size := soloClaimSize(from)
	if i := w.next.Add(size) - size; i < w.end {
		return i, min(i+size, w.end)
	}
	return from, from
}

// nextRunLocked returns the tasks w runs next, in w.run's storage, or none
// when w starts a solo run (c.solo == w); it reports false when the
// consumer is quitting and no task is left. While the run queue is empty
// and no other worker holds the intake role, w takes it, receives, and runs
// what it received itself (see dispatchLocked), so fast handlers cost no
// hand-off between goroutines. Otherwise it takes the first waiting task
// and, while handlers are fast, up to grabMax-1 more behind it. c.mu must
// be held; it is released during intake.
func (c *Consumer) nextRunLocked(w *worker) ([]task, bool) {
	for c.runqHead == len(c.runq) {
		if c.quitting {
			return nil, false
		}
		// While another worker holds tasks it has not started, this one
		// waits instead of receiving: that worker takes the intake role
		// when done, and if its handler is slow, help gives its tasks to
		// idle workers, which must not then be waiting in Receive.
		if !c.receiving && !c.intakeOff && !c.holdingLocked() {
			if run := c.intakeTurnLocked(w); len(run) > 0 || c.solo == w {
				c.spreadLocked()
				return run, true
			}
			continue
		}
		c.idle++
		c.work.Wait()
		c.idle--
	}
	n := 1
	if !c.spreading {
		n = min(len(c.runq)-c.runqHead, grabMax)
	}
	run := append(w.run[:0], c.runq[c.runqHead:c.runqHead+n]...)
	clear(c.runq[c.runqHead : c.runqHead+n])
	c.runqHead += n
	c.dequeued += uint64(n)
	switch {
	case c.runqHead == len(c.runq):
		c.runq, c.runqHead = c.runq[:0], 0
	case c.runqHead >= 1024 && 2*c.runqHead >= len(c.runq):
		k := copy(c.runq, c.runq[c.runqHead:])
		clear(c.runq[k:])
		c.runq, c.runqHead = c.runq[:k], 0
	}
	c.spreadLocked()
	return run, true
}

// spreadLocked runs when a worker is about to start tasks. While handlers
// are slow, it wakes one idle worker for the next task, or to take the free
// intake role while this one runs; that one wakes the next in turn, so a
// batch wakes workers one by one as long as work is left for them.
// Otherwise help decides, after a delay. c.mu must be held.
func (c *Consumer) spreadLocked() {
	if c.spreading && c.spareLocked() > 0 && (c.runqHead < len(c.runq) || (!c.receiving && !c.intakeOff)) {
		c.wakeLocked()
	}
	c.armHelpLocked()
}

// wakeLocked wakes an idle worker, or starts a worker goroutine while
// fewer than Concurrency run: a consumer whose handlers keep up with fewer
// goroutines never starts the rest. c.mu must be held.
func (c *Consumer) wakeLocked() {
	switch {
	case c.idle > 0:
		c.work.Signal()
	case c.started < len(c.workers) && !c.quitting:
		c.startWorkerLocked()
	}
}

// startWorkerLocked starts the next worker's goroutine; c.mu must be held
// and a worker must be left to start.
func (c *Consumer) startWorkerLocked() {
	w := c.workers[c.started]
	c.started++
	c.goroutines.Go(func() { c.runWorker(w) })
}

// spareLocked returns how many workers are idle or not started yet; c.mu
// must be held.
func (c *Consumer) spareLocked() int {
	return c.idle + len(c.workers) - c.started
}

// intakeTurnLocked takes the intake role for one turn of intake and
// dispatches what it received; it returns the tasks for w (see
// dispatchLocked; w is nil for prefetch). c.mu must be held, and is
// released while receiving.
func (c *Consumer) intakeTurnLocked(w *worker) []task {
	c.receiving = true
	c.mu.Unlock()
	ds, err := c.intake(c.intakeCtx)
	c.mu.Lock()
	own := c.dispatchLocked(ds, w)
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
	return own
}

// helpDelay is how long tasks may wait in the run queue while idle workers
// exist before help wakes them: handlers that drain the queue sooner cost no
// goroutine wake-ups, which on a busy consumer cost more than the handlers.
// A sub-millisecond timer may fire up to a millisecond late when the
// process is otherwise idle.
const helpDelay = 100 * time.Microsecond

// soloDeliveryMax is the longest a solo run's deliveries may take, on
// average, before its remaining ones are spread over idle workers: handing
// a delivery to another worker costs a few microseconds.
const soloDeliveryMax = 10 * time.Microsecond

// prefetchDelay is how long every worker must have been busy, with none
// idle, before intake runs beside them to fill the window.
const prefetchDelay = time.Millisecond

// armHelpLocked schedules help when a worker is about to run a task and
// other work is left for another goroutine: tasks in the run queue, or the
// free intake role. c.mu must be held. The run queue may hold tasks while no
// worker is idle: when every worker is blocked in a handler they wait there
// too, and only prefetch can fill the rest of the window.
func (c *Consumer) armHelpLocked() {
	if c.runqHead == len(c.runq) && (c.receiving || c.intakeOff) {
		return
	}
	c.startHelpLocked()
}

// startHelpLocked arms the help timer unless it is armed; c.mu must be
// held.
func (c *Consumer) startHelpLocked() {
	if c.helpArmed || c.quitting {
		return
	}
	delay := helpDelay
	if c.spareLocked() == 0 {
		delay = prefetchDelay
	}
	c.helpArmed, c.armedAt = true, c.completed
	c.armedSolo = 0
	if c.solo != nil {
		c.armedSolo, c.armedNext, c.armedTime = c.soloRuns, c.solo.next.Load(), time.Now()
	}
	c.armedUntil = c.dequeued + uint64(len(c.runq)-c.runqHead)
	c.helpTimer.Reset(delay)
}

// help runs a while after armHelpLocked. When the tasks that were waiting
// then are still not all taken, handlers are slow: the workers spread the
// run queue among themselves at once (each woken worker wakes the next)
// until help finds them fast again. It takes back the tasks a worker stuck
// in a slow handler took but has not started. It wakes an idle worker for
// tasks in the run queue, or else for the free intake role while no worker
// holds unstarted tasks. With no worker idle, help prefetches: it takes the intake
// role from the timer's goroutine and receives while no delivery completes,
// until a worker is idle (which then takes the role itself) or the window
// is full. When deliveries complete meanwhile, handlers are fast: a worker
// soon finds the run queue empty and receives itself, on its own goroutine,
// and prefetch at most refills an empty run queue.
func (c *Consumer) help() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.helpArmed = false
	c.spreading = c.dequeued < c.armedUntil
	// A worker that took several tasks and has started none of the rest
	// since the last look is in a slow handler: the rest go back to the run
	// queue, for idle workers. Look again later while any worker holds
	// tasks it has not started.
	movedBack, pending := 0, false
	if c.cfg.Concurrency > 1 {
		for _, w := range c.workers[:c.started] {
			if n := c.takeBackLocked(w); n > 0 {
				movedBack += n
			} else if w.next.Load() < w.end {
				pending = true
			}
		}
		if pending {
			c.startHelpLocked()
		}
	}
	for c.spareLocked() == 0 && !c.receiving && !c.intakeOff && !c.quitting && c.window.room() &&
		(c.runqHead == len(c.runq) || c.completed == c.armedAt) {
		c.intakeTurnLocked(nil)
	}
	if movedBack > 0 {
		c.spreading = true
	}
	switch {
	case c.spareLocked() == 0:
	case c.runqHead < len(c.runq):
		// Tasks have waited helpDelay, or were dispatched here: an idle
		// worker takes them (and, while spreading, wakes the next).
		c.wakeLocked()
	case !c.receiving && !c.intakeOff && !pending:
		// To take the intake role; not while a worker holds tasks it has
		// not started, which the woken worker could wait in Receive beside.
		c.wakeLocked()
	}
}

// runWorker runs w's tasks. A worker runs a solo run (see runSoloLocked),
// or takes up to grabMax tasks at once while handlers are fast, runs them,
// and then, in one lock round, continues their lanes: a lane's deliveries
// run one after another on one goroutine, and a delivery costs a fraction
// of a lock round. With more than one worker, tasks a worker took but has
// not started stay claimable by help, which moves them back to the run
// queue when the worker is stuck in a slow handler, so idle workers run
// them; a single worker runs its tasks without claiming them.
func (c *Consumer) runWorker(w *worker) {
	defer w.close()
	c.mu.Lock()
	for {
		run, ok := c.nextRunLocked(w)
		if !ok {
			c.mu.Unlock()
			return
		}
		if c.solo == w {
			run = c.runSoloLocked(w)
		}
		for len(run) > 0 {
			w.setRunLocked(run)
			if len(run) > 1 && c.cfg.Concurrency > 1 {
				c.startHelpLocked() // to take back the rest if the first is slow
			}
			c.mu.Unlock()
			ran := 0
			if c.cfg.Concurrency == 1 {
				for _, t := range run {
					c.process(w, t.d)
				}
				ran = len(run)
			} else {
				for i := w.claim(); i >= 0; i = w.claim() {
					c.process(w, run[i].d)
					ran = i + 1
				}
			}
			c.ranLocking(ran)
			next := run[:0]
			for _, t := range run[:ran] {
				if t.l != nil {
					next = c.continueLaneLocked(t.l, next)
				}
			}
			clear(run[len(next):])
			run = next
		}
		w.setRunLocked(run)
	}
}

// runSoloLocked runs w's solo run, claiming its deliveries a few at a time
// (see soloClaimMax), and returns the tasks that continue the lanes
// endSoloLocked gave the deliveries of w's last claim, if it ended the run.
// c.mu must be held; it is released while the deliveries run.
func (c *Consumer) runSoloLocked(w *worker) []task {
	ds := w.solo
	c.mu.Unlock()
	var ran int32
	for from, to := w.claimSolo(0); from < to; from, to = w.claimSolo(to) {
		for _, d := range ds[from:to] {
			c.process(w, d)
		}
		ran = to
	}
	c.ranLocking(int(ran))
	if c.solo == w {
		c.solo = nil
	}
	w.solo, w.end = nil, 0
	run := w.run[:0]
	for _, l := range w.soloLanes {
		if l.held--; l.held == 0 {
			run = c.continueLaneLocked(l, run)
		}
	}
	clear(w.soloLanes)
	w.soloLanes = w.soloLanes[:0]
	return run
}

// ranLocking frees the window slots of ran deliveries a worker has run, and
// takes c.mu.
func (c *Consumer) ranLocking(ran int) {
	c.window.release(ran)
	c.mu.Lock()
	c.completed += uint64(ran)
}

// continueLaneLocked appends to next the task of l's next delivery after the
// one that just ran, or makes l idle when none waits. c.mu must be held.
func (c *Consumer) continueLaneLocked(l *lane, next []task) []task {
	if d := l.pop(); d != nil {
		return append(next, task{l: l, d: d})
	}
	c.lanes.release(l)
	return next
}

// grabMax is the most tasks a worker takes at once while handlers are fast,
// outside a solo run.
const grabMax = 16

// setRunLocked makes run the tasks w runs next, claimed in order by
// w.claim; c.mu must be held.
func (w *worker) setRunLocked(run []task) {
	w.run, w.end, w.seen = run, int32(len(run)), -1
	if len(run) > 0 {
		w.resetNext()
	}
}

// resetNext makes w's next claim start at 0. It stores only when next
// moved: a store is an atomic exchange, which costs as much as a claim, and
// a single worker, which runs its tasks without claiming them, never moves
// it. An empty run needs no reset: with end 0 nothing is claimable. w's
// own goroutine, the only one that claims, calls it, with Consumer.mu held.
func (w *worker) resetNext() {
	if w.next.Load() != 0 {
		w.next.Store(0)
	}
}

// claim returns the index in w.run of the next task w runs, or -1 when
// none is left (all run, or the rest taken back by help).
func (w *worker) claim() int {
	if i := w.next.Add(1) - 1; i < w.end {
		return int(i)
	}
	return -1
}

// holdingLocked reports whether a worker holds tasks it has not started;
// c.mu must be held.
func (c *Consumer) holdingLocked() bool {
	for _, w := range c.workers[:c.started] {
		if w.next.Load() < w.end {
			return true
		}
	}
	return false
}

// takeBackLocked moves the tasks w took but has not started to the run
// queue, when w has started none since the last call (it is running one
// slow handler), and returns how many it moved; c.mu must be held. A solo
// run that was running when help was armed, still has deliveries not
// started, and took more than soloDeliveryMax a delivery since is too slow
// for one worker, however steadily it progresses: it ends (see
// endSoloLocked).
func (c *Consumer) takeBackLocked(w *worker) int {
	i := w.next.Load()
	if i >= w.end {
		return 0
	}
	if w == c.solo {
		if c.armedSolo != c.soloRuns {
			return 0 // started since help was armed; help looks again
		}
		if time.Since(c.armedTime) <= time.Duration(i-c.armedNext)*soloDeliveryMax {
			return 0
		}
		return c.endSoloLocked()
	}
	if i != w.seen {
		w.seen = i
		return 0
	}
	if !w.next.CompareAndSwap(i, w.end) {
		return 0 // w has just started the next one
	}
	c.runq = append(c.runq, w.run[i:w.end]...)
	return int(w.end - i)
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
	if c.hard.Load() {
		c.observe(Event{Message: msg, Outcome: OutcomeAbandoned, Err: context.Canceled})
		return
	}
	if reason, err := checkID(msg.ID, c.cfg.MaxIDLength); err != nil {
		c.deadLetter(d, msg, reason, err, 0)
		return
	}

	if msg.Attempt < 1 {
		msg.Attempt = 1
	}
	if l, ok := d.(Leased); ok {
		c.processLeased(w, d, msg, l)
		return
	}
	if c.cfg.Observer == nil {
		c.handleQuick(w, d, msg)
		return
	}
	c.handle(w, d, msg, nil, nil, lease{}, 1)
}

// processLeased runs a leased delivery, whose handler context ends with the
// lease (or the hard stop).
func (c *Consumer) processLeased(w *worker, d Delivery, msg *Message, l Leased) {
	if lc, ok := d.(LeaseContexter); ok {
		// Deliveries of one lease (a Kafka partition) share a context that
		// ends with the lease or the hard stop; no goroutine or allocation
		// per delivery.
		ls, owned := w.leaseAttempt(c, lc.LeaseContext())
		if owned {
			defer ls.release()
		}
		c.handle(w, d, msg, ls.a.actx.Context, &ls.a, lease{flag: &ls.lost}, 1)
		return
	}
	lost := l.Lost()
	hctx, cancel := context.WithCancel(c.hardCtx)
	defer cancel()
	go func() {
		select {
		case <-lost:
			cancel()
		case <-hctx.Done():
		}
	}()
	c.handle(w, d, msg, hctx, nil, lease{lost: lost}, 1)
}

// lease is a delivery's broker lease as handle checks it: the lost flag
// of its LeaseContext's state on the worker, or else its Lost channel;
// neither for a delivery without a lease.
type lease struct {
	flag *atomic.Bool
	lost <-chan struct{}
}

// gone reports whether the lease was lost; without a lease it costs two
// comparisons.
func (l lease) gone() bool {
	return (l.flag != nil || l.lost != nil) && l.lostNow()
}

func (l lease) lostNow() bool {
	if l.flag != nil {
		return l.flag.Load()
	}
	return isClosed(l.lost)
}

// handle runs the handler chain on msg until its delivery is settled or
// abandoned, holding it through outages, from its outage'th attempt (1
// first). hctx is the handler context (nil: w's attempt state, under
// c.hardCtx), shared the lease's attempt state on w when deliveries share
// it, ls the delivery's lease (zero: none).
func (c *Consumer) handle(w *worker, d Delivery, msg *Message, hctx context.Context, shared *attempt, ls lease, outage int) {
	observed := c.cfg.Observer != nil
	for ; ; outage++ {
		if ls.gone() {
			// The lease went before the handler (re)started: running it
			// would let this delivery overtake the one that caused the loss.
			c.observe(Event{Message: msg, Outcome: OutcomeAbandoned, Err: errors.New("broker lease lost")})
			c.unheld(outage)
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
			a.actx.state.reset()
		default:
			a = &attempt{actx: attemptCtx{Context: hctx, ident: &c.ident}, sctx: settleCtx{Context: c.baseCtx}}
		}
		// The clock is read only to time the handler for the Observer,
		// and then only the monotonic clock (time.Since of a time.Time
		// with a monotonic reading reads nothing else).
		var start time.Duration
		if observed {
			start = time.Since(c.epoch)
		}
		err := handleRecovering(&a.actx, c.handler, msg)
		var dur time.Duration
		if observed {
			dur = time.Since(c.epoch) - start
		}
		if !c.settleAttempt(d, msg, a, err, dur, ls, outage) {
			c.unheld(outage)
			return
		}
		if outage == 1 {
			c.breaker.hold() // until handle returns (see unheld)
		}
	}
}

// handleQuick is handle for a delivery without a lease while no Observer
// is set, with fewer steps for an attempt that succeeds: no clock, no
// lease, w's attempt state.
func (c *Consumer) handleQuick(w *worker, d Delivery, msg *Message) {
	a := &w.a
	a.actx.state.reset()
	err := handleRecovering(&a.actx, c.handler, msg)
	if err == nil {
		c.breaker.success()
		c.ack(d, msg, &a.sctx)
		return
	}
	if c.settleAttempt(d, msg, a, err, 0, lease{}, 1) {
		c.breaker.hold() // until handle returns (see unheld)
		c.handle(w, d, msg, nil, nil, lease{}, 2)
	}
}

// settleAttempt settles d after its outage'th attempt, which returned err
// after dur, on attempt state a, and reports whether an outage holds d for
// another attempt (once the outage backoff has passed). It abandons d when
// its lease ls was lost, or when the attempt failed during the hard stop.
func (c *Consumer) settleAttempt(d Delivery, msg *Message, a *attempt, err error, dur time.Duration, ls lease, outage int) bool {
	if ls.gone() {
		c.observe(Event{Message: msg, Outcome: OutcomeAbandoned, Err: errors.New("broker lease lost"), Duration: dur})
		return false
	}
	if err == nil {
		c.breaker.success()
		outcome := OutcomeProcessed
		if a.actx.state.duplicate.Load() {
			outcome = OutcomeDuplicate
		}
		if c.ack(d, msg, &a.sctx) && c.cfg.Observer != nil {
			c.observe(Event{Message: msg, Outcome: outcome, Duration: dur})
		}
		return false
	}
	if c.hard.Load() {
		c.observe(Event{Message: msg, Outcome: OutcomeAbandoned, Err: err, Duration: dur})
		return false
	}
	class := c.cfg.Classify(err)
	if class == Outage {
		dep := dependency(err)
		if dep == nil || c.probe(c.hardCtx, dep) != nil {
			c.breaker.failure(dep, err)
			wait := c.cfg.OutageBackoff.Delay(outage, nil)
			c.log.Info("outage: holding delivery and trying again", "message_id", msg.ID, "error", err, "in", wait.String())
			c.observe(Event{Message: msg, Outcome: OutcomeFailed, Err: err, Duration: dur})
			if !c.holdFor(wait) {
				c.observe(Event{Message: msg, Outcome: OutcomeAbandoned, Err: err})
				return false
			}
			return true
		}
		// The dependency answers: the failure is this message's.
		c.log.Info("dependency answers; the failure counts as an attempt of this message", "message_id", msg.ID, "error", err)
		class = Retryable
	}
	switch class {
	case Fatal:
		c.breaker.success()
		c.deadLetter(d, msg, ReasonPermanent, err, dur)
	default:
		c.breaker.success()
		if c.cfg.Retry.Exhausted(msg.Attempt) {
			reason := ReasonExhausted
			var pe *PanicError
			if errors.As(err, &pe) {
				reason = ReasonPanic
			}
			c.deadLetter(d, msg, reason, err, dur)
			return false
		}
		c.retry(d, msg, err, dur)
	}
	return false
}

func (c *Consumer) retry(d Delivery, msg *Message, err error, dur time.Duration) {
	delay := c.cfg.Retry.Delay(msg.Attempt, nil)
	var ra *RetryAfterError
	if errors.As(err, &ra) && ra.After > delay {
		delay = ra.After
	}
	if c.caps.MaxDelay > 0 && delay > c.caps.MaxDelay {
		c.log.Warn("retry delay capped to the broker's maximum", "message_id", msg.ID, "asked", delay.String(), "max", c.caps.MaxDelay.String())
		delay = c.caps.MaxDelay
	}
	now := time.Now()
	h := FailureHeaders(msg, Failure{Consumer: c.cfg.Name, Err: err, NextAttempt: msg.Attempt + 1, NotBefore: now.Add(delay), At: now})
	c.log.Info("retrying", "message_id", msg.ID, "attempt", msg.Attempt, "in", delay.String(), "error", err)
	switch ok, refused := c.settle(d, msg, settlement{what: "retry", after: delay, headers: h}); {
	case ok:
		c.observe(Event{Message: msg, Outcome: OutcomeRetried, Err: err, RetryAfter: delay, Duration: dur, Trimmed: trimmed(d)})
	case refused != nil:
		c.deadLetter(d, msg, ReasonRetryRefused, fmt.Errorf("%w (retry copy refused: %w)", err, refused), dur)
	}
}

func (c *Consumer) deadLetter(d Delivery, msg *Message, reason string, err error, dur time.Duration) {
	h := FailureHeaders(msg, Failure{Consumer: c.cfg.Name, Err: err, Reason: reason, NextAttempt: msg.Attempt, At: time.Now()})
	c.log.Warn("dead-lettering", "message_id", msg.ID, "attempt", msg.Attempt, "reason", reason, "error", err)
	if ok, _ := c.settle(d, msg, settlement{what: "dead-letter", headers: h}); ok {
		c.observe(Event{Message: msg, Outcome: OutcomeDeadLettered, Err: err, Reason: reason, Duration: dur, Trimmed: trimmed(d)})
	}
}

// settlement is one way to settle a delivery: "ack", "retry" (after,
// headers) or "dead-letter" (headers).
type settlement struct {
	what    string
	after   time.Duration
	headers map[string]string
}

// attempt is one handler call's context and the settlement context of its
// ack, allocated together.
type attempt struct {
	actx attemptCtx
	sctx settleCtx
}

// worker is one worker goroutine's state, reused across its deliveries.
type worker struct {
	// The tasks w runs next, claimed in order by advancing next; help may
	// take back the unclaimed ones. run, end and seen are written under
	// Consumer.mu; w reads run and end without it while it runs them.
	run  []task
	end  int32
	next atomic.Int32
	seen int32 // next when help last looked, or -1
	// A solo run's deliveries, claimed with claimSolo; w reads them without
	// Consumer.mu. soloLanes are the lanes endSoloLocked gave the
	// deliveries of w's last claim, in order, for w to continue after
	// running them; written and read under Consumer.mu.
	solo      []Delivery
	soloLanes []*lane

	a      attempt // contexts under c.hardCtx and c.baseCtx
	leases map[context.Context]*leaseState
	// The lease state used last, checked before the map.
	lastLease context.Context
	last      *leaseState
	pruneIn   int // new leases until the full map may be pruned again
}

// leaseState is a worker's attempt state for the deliveries of one lease:
// its handler context is cancelled when the lease ends or on hard stop.
type leaseState struct {
	a attempt
	// lost is set when the lease ends: at once for a lease done when the
	// state is made, else by the lease's AfterFunc (a moment after it
	// ends, as if it ended then), before it cancels the handler context.
	// An atomic load, where the lease context's Err is an interface call.
	lost atomic.Bool
	stop func() bool // unhooks the lost hook from the lease
	end  context.CancelFunc
}

// maxLeases bounds a worker's cached lease states; done ones are pruned
// when it is reached.
const maxLeases = 256

// leaseAttempt returns w's state for deliveries leased by lease, creating
// it on first use. When w's cache is full of live leases, the state is not
// cached and returned as owned: the caller releases it.
func (w *worker) leaseAttempt(c *Consumer, lease context.Context) (*leaseState, bool) {
	if w.last != nil && w.lastLease == lease {
		return w.last, false // deliveries of one lease come in runs
	}
	if ls := w.leases[lease]; ls != nil {
		w.lastLease, w.last = lease, ls
		return ls, false
	}
	if w.leases == nil {
		w.leases = make(map[context.Context]*leaseState)
	}
	if w.pruneIn--; len(w.leases) >= maxLeases && w.pruneIn <= 0 {
		// Pruned at most once per maxLeases new leases, so an adapter with
		// a live lease per delivery costs no scan per delivery.
		w.pruneIn = maxLeases
		w.lastLease, w.last = nil, nil
		for k, ls := range w.leases {
			if k.Err() != nil {
				ls.release()
				delete(w.leases, k)
			}
		}
	}
	return w.newLeaseState(c, lease)
}

// newLeaseState makes the state for lease: cached (see leaseAttempt), or
// owned when the cache is full.
func (w *worker) newLeaseState(c *Consumer, lease context.Context) (*leaseState, bool) {
	hctx, cancel := context.WithCancel(c.hardCtx)
	ls := &leaseState{end: cancel}
	ls.stop = context.AfterFunc(lease, func() {
		ls.lost.Store(true)
		cancel()
	})
	if lease.Err() != nil {
		ls.lost.Store(true)
	}
	ls.a.actx.Context, ls.a.actx.ident, ls.a.sctx.Context = hctx, &c.ident, c.baseCtx
	if len(w.leases) >= maxLeases {
		return ls, true
	}
	w.leases[lease] = ls
	w.lastLease, w.last = lease, ls
	return ls, false
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

// ack acknowledges d, on the first try with ctx (reset), and goes on as
// settle does when that fails.
func (c *Consumer) ack(d Delivery, msg *Message, ctx *settleCtx) bool {
	if c.closed.Load() {
		ok, _ := c.settle(d, msg, settlement{what: "ack"})
		return ok
	}
	ctx.init(c.cfg.SettleTimeout)
	err := d.Ack(ctx)
	ctx.cancel()
	if err == nil {
		return true
	}
	if again, _ := c.failed(d, msg, "ack", 1, nil, err); !again {
		return false
	}
	ok, _ := c.settleFrom(d, msg, settlement{what: "ack"}, 2)
	return ok
}

// settle performs s until it succeeds, backing off between tries (see
// failed). It reports whether s succeeded; when it gives up on a retry copy
// the broker refused while it answered, refused is the publish's error, and
// the caller dead-letters the message instead. Otherwise it gives up
// (leaving the delivery unsettled) only on hard stop, a lost lease or a
// closed source.
func (c *Consumer) settle(d Delivery, msg *Message, s settlement) (ok bool, refused error) {
	return c.settleFrom(d, msg, s, 1)
}

// settleFrom is settle from its try'th try on.
func (c *Consumer) settleFrom(d Delivery, msg *Message, s settlement, try int) (ok bool, refused error) {
	held, faults := false, 0
	for ; ; try++ {
		if c.closed.Load() {
			c.observe(Event{Message: msg, Outcome: OutcomeAbandoned, Err: fmt.Errorf("%s: %w", s.what, ErrSourceClosed)})
			return false, nil
		}
		ctx := newSettleCtx(c.baseCtx, c.cfg.SettleTimeout)
		err := s.do(ctx, d)
		ctx.cancel()
		if err == nil {
			return true, nil
		}
		if !held {
			// Held from the first failure to the end (see unheld).
			held = true
			c.breaker.hold()
			defer c.breaker.unhold()
		}
		if again, refused := c.failed(d, msg, s.what, try, &faults, err); !again {
			return false, refused
		}
	}
}

// failed handles the failed try'th try of settling d (what: "ack", "retry"
// or "dead-letter") and reports whether to try again, after backing off.
//
// Who is at fault decides the route. A copy the broker refuses for good
// (ErrCopyRefused), or any failure while the Source, probed, answers, is
// this message's. A retry copy refused for good is given up at once with
// refused set, so the caller dead-letters the message; another retry
// copy failure of the message counts as an attempt (*faults, the
// message's failed copies so far): it is tried again after the retry
// policy's delay while attempts are left, and given up like a refused one
// when they run out. An ack or a dead-letter copy is tried again after the
// outage backoff without counting towards the breaker (an adapter fits
// dead-letter copies to the broker's limits, so this is a last resort that
// never spins). Otherwise the broker is down: the failure counts towards
// the breaker and the delivery is held. A lost lease or the hard stop
// gives up.
func (c *Consumer) failed(d Delivery, msg *Message, what string, try int, faults *int, err error) (again bool, refused error) {
	if errors.Is(err, ErrAlreadySettled) {
		c.log.Error("delivery settled twice; this is an adapter bug", "message_id", msg.ID, "settlement", what)
		return false, nil
	}
	if leaseLost(d) {
		// The broker redelivers it (e.g. an AMQP channel closed); retrying
		// the settlement could never succeed.
		c.log.Warn("broker lease lost before settlement; the broker redelivers the message", "message_id", msg.ID, "settlement", what, "error", err)
		c.observe(Event{Message: msg, Outcome: OutcomeAbandoned, Err: fmt.Errorf("%s: broker lease lost: %w", what, err)})
		return false, nil
	}
	src, _ := c.src.(Prober)
	messageFault := errors.Is(err, ErrCopyRefused) || (src != nil && c.probe(c.hardCtx, src) == nil)
	wait := c.cfg.OutageBackoff.Delay(try, nil)
	if messageFault && what == "retry" {
		*faults++
		if errors.Is(err, ErrCopyRefused) || c.cfg.Retry.Exhausted(msg.Attempt+*faults) {
			c.log.Error("the broker refused the retry copy while it answers; dead-lettering the message", "message_id", msg.ID, "error", err)
			return false, err
		}
		wait = c.cfg.Retry.Delay(msg.Attempt+*faults, nil)
		c.log.Error("retry copy failed while the broker answers; counted as an attempt, trying again", "message_id", msg.ID, "error", err, "in", wait.String())
	} else if messageFault {
		c.log.Error("settlement failed while the broker answers; trying again", "message_id", msg.ID, "settlement", what, "error", err, "in", wait.String())
	} else {
		c.breaker.failure(src, err)
		c.log.Error("settlement failed; delivery stays unsettled and is tried again", "message_id", msg.ID, "settlement", what, "error", err, "in", wait.String())
	}
	c.observe(Event{Message: msg, Outcome: OutcomeFailed, Err: fmt.Errorf("%s: %w", what, err)})
	if !c.holdFor(wait) {
		c.observe(Event{Message: msg, Outcome: OutcomeAbandoned, Err: err})
		return false, nil
	}
	return true, nil
}

// holdFor holds a delivery through an outage backoff of d, or until the hard
// stop; it reports whether d elapsed.
func (c *Consumer) holdFor(d time.Duration) bool {
	c.breaker.hold()
	defer c.breaker.unhold()
	return sleep(c.hardCtx, d)
}

// unheld ends the hold of a delivery that leaves handle at its outage'th
// attempt: one held through an outage (outage > 1) is held no more. A
// delivery counts as held from its first outage failure to its settlement
// or abandonment, its retried attempts included, so the breaker (see
// breaker.probeLoop) never takes a held delivery's running attempt for
// "none left".
func (c *Consumer) unheld(outage int) {
	if outage > 1 {
		c.breaker.unhold()
	}
}

// probe asks dep whether it is up, within Config.ProbeTimeout.
func (c *Consumer) probe(ctx context.Context, dep Prober) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ProbeTimeout)
	defer cancel()
	return dep.Probe(ctx)
}

// dependency returns the Dependency of the outermost UnavailableError in
// err, or nil.
func dependency(err error) Prober {
	var ue *UnavailableError
	if errors.As(err, &ue) {
		return ue.Dependency
	}
	return nil
}

// trimmed reports whether d's adapter trimmed the copy it last published.
func trimmed(d Delivery) bool {
	t, ok := d.(CopyTrimmer)
	return ok && t.CopyTrimmed()
}

// leaseLost reports whether d is Leased and its lease is gone.
func leaseLost(d Delivery) bool {
	l, ok := d.(Leased)
	return ok && isClosed(l.Lost())
}

// isClosed reports whether ch is closed (or has a value ready).
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
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
