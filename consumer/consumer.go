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
	log     *slog.Logger
	caps    Capabilities

	window *window
	epoch  time.Time // with a monotonic reading: handler timing reads only that clock

	lanes laneTable            // nil slots when deliveries are not ordered
	plain *scheduler[Delivery] // the reference scheduler, when used (see reference.go)

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

// New returns a Consumer that feeds src's deliveries to h wrapped in mws
// (mws[0] outermost), and recovers panics outside them all as Recover does.
// It validates cfg against the defaults and src's capabilities and reports
// every problem at once. The chain must hold an idempotency middleware (see
// Deduplicating) unless cfg.Duplicates is AllowDuplicates with a reason;
// otherwise New returns ErrNoIdempotency.
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
	chain, err := chainDuplicates(h, cfg, cfg.Logger.With("consumer", cfg.Name, "broker", caps.Broker), mws)
	if err != nil {
		return nil, err
	}
	c := &Consumer{
		cfg:     cfg,
		src:     src,
		handler: chain,
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
	if plainByDefault {
		c.usePlain()
	}
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
	if c.plain != nil {
		c.startPlainLocked()
	} else {
		c.startWorkerLocked() // the rest start as work finds no idle worker
	}
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
	if c.plain != nil {
		c.plain.stop()
	}
	if err == nil {
		c.goroutines.Wait()
		if c.plain != nil {
			c.plain.wait()
			for _, w := range c.workers {
				w.close()
			}
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
