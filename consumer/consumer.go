package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
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
type Consumer struct {
	cfg     Config
	src     Source
	handler Handler
	log     *slog.Logger
	caps    Capabilities

	slots chan struct{}
	ready chan *lane

	mu    sync.Mutex
	lanes map[string]*lane

	breaker  breaker
	inflight sync.WaitGroup

	baseCtx    context.Context // never cancelled by the stop sequence; carries values
	hardCtx    context.Context // cancelled on hard stop
	hardCancel context.CancelFunc
	stopOnce   sync.Once
	stopCh     chan struct{}
	quit       chan struct{} // closed after the drain: workers exit
	hardOnce   sync.Once
	hardCh     chan struct{} // closed by hardStop; cancels hardCtx
	closed     atomic.Bool   // source closed: no settlement may follow
	running    atomic.Bool
	done       chan struct{}
	runErr     error
}

type lane struct {
	key     string
	queue   []Delivery
	running bool
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
		slots:   make(chan struct{}, cfg.MaxInFlight),
		ready:   make(chan *lane, cfg.MaxInFlight),
		lanes:   make(map[string]*lane),
		stopCh:  make(chan struct{}),
		quit:    make(chan struct{}),
		hardCh:  make(chan struct{}),
		done:    make(chan struct{}),
	}
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

	var workers sync.WaitGroup
	for range c.cfg.Concurrency {
		workers.Go(c.work)
	}
	intakeCtx, stopIntake := context.WithCancel(ctx)
	defer stopIntake()
	intakeDone := make(chan error, 1)
	go func() { intakeDone <- c.receiveLoop(intakeCtx) }()

	var srcErr error
	select {
	case <-ctx.Done():
	case <-c.stopCh:
	case srcErr = <-intakeDone:
		intakeDone <- srcErr
	}
	c.log.Info("stopping: intake closed, draining in-flight deliveries")
	stopIntake()
	srcErr = <-intakeDone

	err := c.drain()
	// Workers exit once their current delivery is done. After a clean drain
	// no lane is queued; after ErrStuckHandlers the stuck workers leave when
	// their handlers return, and nothing of theirs is settled (closed is set).
	close(c.quit)
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

func (c *Consumer) receiveLoop(ctx context.Context) error {
	failures := 0
	for {
		if err := c.breaker.wait(ctx); err != nil {
			return err
		}
		select {
		case c.slots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		n := 1
	fill:
		for n < c.cfg.ReceiveBatch {
			select {
			case c.slots <- struct{}{}:
				n++
			default:
				break fill
			}
		}
		ds, err := c.src.Receive(ctx, n)
		for i := len(ds); i < n; i++ {
			<-c.slots
		}
		for i, d := range ds {
			if i >= n {
				// The source returned more than asked: take slots for them too.
				c.slots <- struct{}{}
			}
			c.inflight.Add(1)
			c.dispatch(d)
		}
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, ErrSourceClosed) {
				return err
			}
			failures++
			d := c.cfg.OutageBackoff.Delay(failures, nil)
			c.log.Error("receive failed; retrying", "error", err, "in", d)
			if !sleep(ctx, d) {
				return ctx.Err()
			}
			continue
		}
		failures = 0
	}
}

func (c *Consumer) laneKey(m *Message) string {
	switch c.cfg.Ordering {
	case Unordered:
		return ""
	case OrderByPartition:
		return "p" + strconv.FormatInt(int64(m.Partition), 10)
	}
	if m.Key == "" {
		return "p" + strconv.FormatInt(int64(m.Partition), 10)
	}
	return "k" + m.Key
}

func (c *Consumer) dispatch(d Delivery) {
	key := c.laneKey(d.Message())
	if key == "" {
		c.ready <- &lane{queue: []Delivery{d}, running: true}
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.lanes[key]
	if l == nil {
		l = &lane{key: key}
		c.lanes[key] = l
	}
	l.queue = append(l.queue, d)
	if !l.running {
		l.running = true
		c.ready <- l // never blocks: lanes <= in-flight <= cap(ready)
	}
}

func (c *Consumer) work() {
	for {
		var l *lane
		select {
		case l = <-c.ready:
		case <-c.quit:
			return
		}
		c.mu.Lock()
		d := l.queue[0]
		l.queue[0] = nil
		l.queue = l.queue[1:]
		c.mu.Unlock()

		c.process(d)
		<-c.slots
		c.inflight.Done()

		c.mu.Lock()
		if len(l.queue) > 0 {
			c.ready <- l
		} else {
			l.running = false
			if l.key != "" {
				delete(c.lanes, l.key)
			}
		}
		c.mu.Unlock()
	}
}

// process runs one delivery to its settlement, or abandons it.
func (c *Consumer) process(d Delivery) {
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
	hctx, cancel := context.WithCancel(c.hardCtx)
	defer cancel()
	var lost <-chan struct{}
	if l, ok := d.(Leased); ok {
		lost = l.Lost()
		go func() {
			select {
			case <-lost:
				cancel()
			case <-hctx.Done():
			}
		}()
	}
	isLost := func() bool {
		select {
		case <-lost:
			return true
		default:
			return false
		}
	}

	for outage := 1; ; outage++ {
		if isLost() {
			// The lease went before the handler (re)started: running it
			// would let this delivery overtake the one that caused the loss.
			c.observe(Event{Message: msg, Outcome: OutcomeAbandoned, Err: errors.New("broker lease lost")})
			return
		}
		actx := WithAttemptState(hctx)
		start := time.Now()
		err := c.handler.Handle(actx, msg)
		dur := time.Since(start)
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
			if c.settle(d, msg, "ack", d.Ack) {
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
	if c.settle(d, msg, "retry", func(ctx context.Context) error { return d.Retry(ctx, delay, h) }) {
		c.observe(Event{Message: msg, Outcome: OutcomeRetried, Err: err, RetryAfter: delay, Duration: dur})
	}
}

func (c *Consumer) deadLetter(d Delivery, msg *Message, reason string, err error, dur time.Duration) {
	h := FailureHeaders(msg, Failure{Consumer: c.cfg.Name, Err: err, Reason: reason, NextAttempt: msg.Attempt, At: time.Now()})
	c.log.Warn("dead-lettering", "message_id", msg.ID, "attempt", msg.Attempt, "reason", reason, "error", err)
	if c.settle(d, msg, "dead-letter", func(ctx context.Context) error { return d.DeadLetter(ctx, h) }) {
		c.observe(Event{Message: msg, Outcome: OutcomeDeadLettered, Err: err, Reason: reason, Duration: dur})
	}
}

// settle calls fn until it succeeds, backing off between tries; a failing
// settlement is a broker outage and counts towards the breaker. It gives up
// (leaving the delivery unsettled) only on hard stop.
func (c *Consumer) settle(d Delivery, msg *Message, what string, fn func(context.Context) error) bool {
	for try := 1; ; try++ {
		if c.closed.Load() {
			c.observe(Event{Message: msg, Outcome: OutcomeAbandoned, Err: fmt.Errorf("%s: %w", what, ErrSourceClosed)})
			return false
		}
		ctx, cancel := context.WithTimeout(c.baseCtx, c.cfg.SettleTimeout)
		err := fn(ctx)
		cancel()
		if err == nil {
			return true
		}
		if errors.Is(err, ErrAlreadySettled) {
			c.log.Error("delivery settled twice; this is an adapter bug", "message_id", msg.ID, "settlement", what)
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
