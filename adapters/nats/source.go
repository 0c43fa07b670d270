package nats

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/oncely/oncely/adapters/internal/startpos"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/inbox"
	"github.com/oncely/oncely/internal/redact"
)

// Source is a consumer.Source reading one subject of a JetStream stream with
// a durable pull consumer: explicit acks after processing, leases renewed
// with in-progress acks, MaxAckPending on the source stream as backpressure
// and a delivery limit (Config.MaxDeliver) enforced by the Source, never by
// the server. Retried copies go to a retry stream of the consumer's own,
// dead letters to its dead-letter stream (see the package documentation).
// Create it with New; the consumer runtime closes it. Its methods are safe
// for concurrent use.
type Source struct {
	cfg Config
	log *slog.Logger
	nc  *nats.Conn
	js  jetstream.JetStream

	limit int // the largest copy published: max_payload or Config.MaxMessageSize

	pullers []*puller // the source and the retry stream
	acks    *acker

	in      *inbox.Inbox[*delivery] // from the pull subscriptions' callbacks to Receive
	closing chan struct{}
	life    context.Context // done once Close begins: bounds the adapter's own retries
	endLife context.CancelFunc

	mu        sync.Mutex
	held      map[heldKey]*delivery // one delivery per stored message (see track)
	untracked uint64                // deliveries without metadata held so far

	supervisors sync.WaitGroup
	wg          sync.WaitGroup
	closeOnce   sync.Once
	closeErr    error
}

var (
	_ consumer.Source          = (*Source)(nil)
	_ consumer.BacklogReporter = (*Source)(nil)
	_ consumer.Prober          = (*Source)(nil)
	_ consumer.ConsumerNamer   = (*Source)(nil)
	_ consumer.Delivery        = (*delivery)(nil)
	_ consumer.CopyTrimmer     = (*delivery)(nil)
)

// Connect dials url (nats://host:port or tls://host:port, comma-separated
// for a cluster) with endless reconnects, bounded by ctx for the first
// connect. Its errors hold no password or token of url (internal/redact).
func Connect(ctx context.Context, url string, tlsCfg *tls.Config, name string) (*nats.Conn, error) {
	opts := []nats.Option{nats.Name(name), nats.MaxReconnects(-1), nats.RetryOnFailedConnect(false)}
	if tlsCfg != nil {
		opts = append(opts, nats.Secure(tlsCfg))
	}
	if dl, ok := ctx.Deadline(); ok {
		opts = append(opts, nats.Timeout(max(time.Until(dl), time.Millisecond)))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, redact.Error(fmt.Errorf("connecting to %s: %w", redact.URL(url), err), url)
	}
	return nc, nil
}

// New validates cfg, connects, creates the source, retry and dead-letter
// streams when absent and the durable consumers on the source and retry
// streams (updating their settings to cfg), and starts pulling.
func New(ctx context.Context, cfg Config) (*Source, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	nc, err := Connect(ctx, cfg.URL, cfg.TLS, "oncely "+cfg.Consumer)
	if err != nil {
		return nil, fmt.Errorf("nats: %w", err)
	}
	src, err := newSource(ctx, cfg, nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("nats: %w", err)
	}
	return src, nil
}

func newSource(ctx context.Context, cfg Config, nc *nats.Conn) (*Source, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	src := &Source{
		cfg:   cfg,
		log:   cfg.Logger.With("broker", "nats", "source", cfg.Source, "consumer", cfg.Consumer),
		nc:    nc,
		js:    js,
		limit: int(nc.MaxPayload()),
		// A delivery leaving the inbox frees its stream's slot.
		in:      inbox.New(inbox.Config[*delivery]{Taken: func(d *delivery) { d.from.free() }}),
		closing: make(chan struct{}),
		held:    map[heldKey]*delivery{},
	}
	src.life, src.endLife = context.WithCancel(context.Background())
	if cfg.MaxMessageSize > 0 && cfg.MaxMessageSize < src.limit {
		src.limit = cfg.MaxMessageSize
	}
	rctx, cancel := context.WithTimeout(ctx, cfg.RPCTimeout)
	defer cancel()
	if _, err := ensureStream(rctx, js, DeadLetterSubject(cfg.Source, cfg.Consumer), cfg.Replicas); err != nil {
		return nil, err
	}
	// Messages reach the inbox, and can be settled, as soon as a pull
	// subscription opens.
	src.acks = newAcker(func() error { return nc.FlushTimeout(cfg.RPCTimeout) }, src.log)
	sourcePuller := newPuller(cfg.Source, sourceShare(cfg.Prefetch), cfg.MaxAckPending, cfg.Prefetch)
	sourcePuller.start, _ = startpos.Parse(cfg.Start) // checked by validate
	for _, p := range []*puller{
		sourcePuller,
		newPuller(RetrySubject(cfg.Source, cfg.Consumer), retryShare(cfg.Prefetch), retryMaxAckPending, cfg.Prefetch),
	} {
		if err := src.open(rctx, p); err != nil {
			// What the first subscription delivered is left unacked:
			// the server delivers it again after AckWait.
			close(src.closing)
			src.endLife()
			for _, p := range src.pullers {
				p.cc.Stop()
			}
			src.wg.Wait()
			_ = src.acks.stop()
			return nil, err
		}
		src.pullers = append(src.pullers, p)
	}
	for _, p := range src.pullers {
		src.supervisors.Go(func() { src.supervise(p) })
	}
	src.wg.Go(src.renew)
	return src, nil
}

// Capabilities reports JetStream's: no partitions (the key is a header),
// delays honoured on the broker (an early retried copy is nak'd with the
// rest of its delay), Message.Attempt from oncely's header (the server's
// delivery count also counts clean closes), leases renewed, FanOut true
// (each consumer name is a durable consumer of its own, so each gets every
// message) and the prefetch of the two pull subscriptions.
func (src *Source) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{
		Broker:       "nats",
		NativeDelay:  true,
		LeaseRenewal: true,
		FanOut:       true,
		Prefetch:     src.cfg.Prefetch,
	}
}

// ConsumerName is Config.Consumer.
func (src *Source) ConsumerName() string { return src.cfg.Consumer }

// Probe asks the server for the account's JetStream info: nil when
// JetStream answers.
func (src *Source) Probe(ctx context.Context) error {
	if _, err := src.js.AccountInfo(ctx); err != nil {
		return fmt.Errorf("nats: probe: %w", err)
	}
	return nil
}

// Receive returns up to max deliveries waiting in the inbox, waiting for
// at least one. The two pull subscriptions together hold at most
// Config.Prefetch messages ahead of Receive (their pull buffers and their
// slots in the inbox), and the server hands out at most MaxAckPending
// unacknowledged ones of the source stream.
func (src *Source) Receive(ctx context.Context, max int) ([]consumer.Delivery, error) {
	return src.in.Receive(ctx, src.closing, max)
}

// accept queues d for Receive (in the slot of its puller's that deliver
// reserved), unless the Source is closing (Close naks d, so the server
// redelivers it at once), d is a retried copy that came early (nak'd with
// the rest of its delay) or d has reached Config.MaxDeliver deliveries (it
// is dead-lettered with reason ReasonDeliveryLimit, see deadLetterLimit); a
// retried copy's first delivery, which comes before it is due and is
// nak'd, is not counted. It reports whether d was queued; when not,
// deliver frees the slot.
func (src *Source) accept(d *delivery) bool {
	m, delivered := d.m, d.delivered // no later delivery is adopted before accept returns
	select {
	case <-src.closing:
		return false // Close naks it
	default:
	}
	limit := uint64(src.cfg.MaxDeliver)
	if nb := consumer.NotBeforeFromHeaders(d.msg.Headers); !nb.IsZero() {
		if wait := time.Until(nb); wait > 0 {
			src.forget(d, false)
			if err := m.NakWithDelay(wait); err != nil {
				src.log.Warn("delaying an early retried copy failed; the lease expires and it comes back", "message_id", d.msg.ID, "error", err)
			}
			return false
		}
		limit++ // its first delivery came before it was due, as a delayed copy's does
	}
	if delivered >= limit {
		src.wg.Go(func() { src.deadLetterLimit(d, delivered) })
		return false
	}
	src.in.Put(d)
	return true
}

// renew sends an in-progress ack for every held delivery each AckWait/3,
// so a long handler keeps its lease.
func (src *Source) renew() {
	t := time.NewTicker(src.cfg.AckWait / 3)
	defer t.Stop()
	for {
		select {
		case <-src.closing:
			return
		case <-t.C:
		}
		src.mu.Lock()
		ds := make([]*delivery, 0, len(src.held))
		for _, d := range src.held {
			ds = append(ds, d)
		}
		src.mu.Unlock()
		for _, d := range ds {
			d.inProgress()
		}
	}
}

// release naks d if it is still unsettled, so the server redelivers it.
func (src *Source) release(d *delivery) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.settled || d.released {
		return
	}
	d.released = true
	src.forget(d, false) // before the nak: its redelivery is a new delivery
	_ = d.m.Nak()
}

// Close stops intake and gives every unsettled delivery back: it waits for
// the pull subscriptions (their buffered messages are kept to be nak'd),
// waits for their last pull requests to expire (Config.PollWait), naks every
// delivery still held or buffered, sends the acks still queued, flushes the
// connection (so the server has every ack and nak sent before) and closes
// it. Close is idempotent.
func (src *Source) Close(ctx context.Context) error {
	src.closeOnce.Do(func() {
		close(src.closing)
		src.endLife()
		expired := time.After(src.cfg.PollWait + 100*time.Millisecond)
		var errs []error
		drained := make([]<-chan struct{}, len(src.pullers))
		for i, p := range src.pullers {
			drained[i] = p.drain()
		}
		for i, done := range drained {
			select {
			case <-done:
			case <-ctx.Done():
				errs = append(errs, fmt.Errorf("draining the pull subscription of %s: %w", StreamName(src.pullers[i].subject), ctx.Err()))
			}
		}
		if err := wait(ctx, &src.supervisors); err != nil {
			errs = append(errs, fmt.Errorf("stopping the pull subscriptions: %w", err))
		}
		select { // a nak before the last pull request expired would be redelivered to it
		case <-expired:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("waiting for the pull requests to expire: %w", ctx.Err()))
		}
		src.mu.Lock()
		ds := make([]*delivery, 0, len(src.held))
		for _, d := range src.held {
			ds = append(ds, d)
		}
		src.mu.Unlock()
		for _, d := range ds {
			src.release(d)
		}
		if err := wait(ctx, &src.wg); err != nil {
			errs = append(errs, fmt.Errorf("waiting for the adapter's goroutines: %w", err))
		}
		if err := src.acks.stop(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
			errs = append(errs, fmt.Errorf("sending the queued acks: %w", err))
		}
		if err := src.nc.FlushTimeout(src.cfg.RPCTimeout); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
			errs = append(errs, fmt.Errorf("flushing acks: %w", err))
		}
		src.nc.Close()
		if len(errs) > 0 {
			src.closeErr = fmt.Errorf("nats: closing: %w", errors.Join(errs...))
		}
		src.log.Info("closed", "error", src.closeErr)
	})
	return src.closeErr
}

func wait(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
