package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncely/oncely/adapters"
)

// Relay publishes committed outbox rows through a broker and marks them
// published. Guarantees:
//
//   - Nothing is lost: a row is marked published only after Publish returned
//     nil, i.e. the broker confirmed it. A crash or error between publish and
//     mark leaves the row unpublished, and it is published again with the
//     same ID (at-least-once; downstream consumers dedupe by ID).
//   - No row is skipped: each round selects unpublished rows, never rows
//     past a cursor, so a transaction that commits after a later-numbered one
//     is published in a later round.
//   - Per (destination, key) order is commit order, also with several relays
//     (or workers) at once: a round owns each key it publishes through a
//     transaction-level advisory lock, and takes a prefix of the key's
//     unpublished rows in row order, which Send made commit order.
//   - Different keys publish in parallel (Config.Workers rounds at once, each
//     with up to Config.BatchSize rows and one Publish per destination).
//   - A failing destination delays only itself: when none of its rows
//     passes it is held with its own jittered backoff while the others
//     publish. A row the broker refuses while others of its destination pass
//     delays only its own key, and after Config.Refused.MaxAttempts moves to
//     the outbox_dead table with the broker's reason (see DeadLetters).
//   - When the broker or the database is down, destinations and rounds back
//     off with jitter and resume by themselves; rows are kept, the depth
//     metric grows.
type Relay struct {
	pool   *pgxpool.Pool
	broker adapters.Broker
	cfg    Config
	table  string
	// deadTable holds the rows refused until their attempts ran out.
	deadTable string
	lockPfx   string
	holds     *destHolds
	metrics   *relayMetrics
	wakes     []chan struct{}
	running   atomic.Bool
	hooks     hooks
}

// hooks let tests act at points of a round.
type hooks struct {
	afterWindow  func(ctx context.Context)
	afterPublish func(ctx context.Context, pid uint32)
	listening    func()
	roundEnded   func(n int, err error)
}

// NewRelay returns a Relay reading the outbox through pool and publishing
// through broker (from adapters.Open). cfg is validated here, every problem
// reported at once; metrics are registered on cfg.Registerer.
func NewRelay(pool *pgxpool.Pool, broker adapters.Broker, cfg Config) (*Relay, error) {
	cfg, err := cfg.withDefaults()
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	if pool == nil {
		errs = append(errs, errors.New("outbox: nil pool"))
	}
	if broker == nil {
		errs = append(errs, errors.New("outbox: nil broker"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	m, err := newRelayMetrics(cfg.Registerer, cfg.Schema)
	if err != nil {
		return nil, err
	}
	r := &Relay{
		pool:      pool,
		broker:    broker,
		cfg:       cfg,
		table:     pgx.Identifier{cfg.Schema, Table}.Sanitize(),
		deadTable: pgx.Identifier{cfg.Schema, DeadTable}.Sanitize(),
		lockPfx:   "oncely.outbox.relay\n" + cfg.Schema + "\n",
		metrics:   m,
	}
	r.holds = newDestHolds(r.newBackoff)
	for range cfg.Workers {
		r.wakes = append(r.wakes, make(chan struct{}, 1))
	}
	return r, nil
}

// Run publishes until ctx is done, then returns nil once every round has
// ended (a round cut short is rolled back, its rows published again later).
// It starts Config.Workers workers, the LISTEN connection unless
// Config.NoListen, and the maintenance loop (metrics, cleanup). A Relay runs
// once at a time; Run returns an error if it is already running, or if the
// schema lacks the outbox's tables up to outbox_dead (run oncely migrate).
// A database that does not answer that check is not an error: the workers
// back off until it does.
func (r *Relay) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return errors.New("outbox: relay already running")
	}
	defer r.running.Store(false)
	if err := r.checkSchema(ctx); errors.Is(err, errNotMigrated) {
		return err
	}
	var wg sync.WaitGroup
	for _, w := range r.wakes {
		wg.Add(1)
		go func() { defer wg.Done(); r.work(ctx, w) }()
	}
	if !r.cfg.NoListen {
		wg.Add(1)
		go func() { defer wg.Done(); r.listen(ctx) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); r.maintain(ctx) }()
	wg.Wait()
	return nil
}

// errNotMigrated: the schema lacks the outbox's tables up to outbox_dead.
var errNotMigrated = errors.New("run oncely migrate")

// checkSchema reports errNotMigrated unless the schema has the outbox's
// tables up to outbox_dead (migration 0004_outbox_refused).
func (r *Relay) checkSchema(ctx context.Context) error {
	var ok bool
	if err := r.pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", r.deadTable).Scan(&ok); err != nil {
		return fmt.Errorf("outbox: check schema %s: %w", r.cfg.Schema, err)
	}
	if !ok {
		return fmt.Errorf("outbox: schema %s has no %s table (migration 0004_outbox_refused): %w", r.cfg.Schema, DeadTable, errNotMigrated)
	}
	return nil
}

// wakeAll tells every idle worker to look for rows now.
func (r *Relay) wakeAll() { r.wakeOthers(nil) }

// wakeOthers tells every idle worker but the one waiting on self to look for
// rows now.
func (r *Relay) wakeOthers(self chan struct{}) {
	for _, w := range r.wakes {
		if w == self {
			continue
		}
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

func (r *Relay) newBackoff() *backoff.ExponentialBackOff {
	return backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(r.cfg.BackoffMin),
		backoff.WithMaxInterval(r.cfg.BackoffMax),
		backoff.WithRandomizationFactor(0.5),
		backoff.WithMaxElapsedTime(0),
	)
}

// sleep waits d or until ctx is done, reporting whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// work runs rounds: at once while they publish rows, after a wake or
// PollInterval when one found nothing to claim, after a backoff when one
// failed.
//
// A round that found every key of its window owned by other rounds claims
// nothing and waits: the owners go on while they publish, and a round that
// left keys of its window untried wakes the other workers (see round). A
// round that failed rolls its rows back and wakes the other workers, which
// look again instead of sleeping PollInterval while the keys are free (and
// its own worker backs off).
func (r *Relay) work(ctx context.Context, wake chan struct{}) {
	bo := r.newBackoff()
	poll := time.NewTimer(r.cfg.PollInterval)
	defer poll.Stop()
	for {
		n, err := r.round(ctx, wake)
		if r.hooks.roundEnded != nil {
			r.hooks.roundEnded(n, err)
		}
		if ctx.Err() != nil {
			return
		}
		if n > 0 && err != nil {
			r.wakeOthers(wake)
		}
		if err != nil {
			d := bo.NextBackOff()
			r.cfg.Logger.Warn("outbox relay: round failed; backing off", "schema", r.cfg.Schema, "backoff", d.String(), "error", err)
			if !sleep(ctx, d) {
				return
			}
			continue
		}
		bo.Reset()
		if n > 0 {
			continue
		}
		if !poll.Stop() {
			select {
			case <-poll.C:
			default:
			}
		}
		poll.Reset(r.cfg.PollInterval)
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-poll.C:
		}
	}
}

// listen keeps a dedicated connection LISTENing on Channel(Schema) and wakes
// the workers on every notification, reconnecting with backoff when it
// breaks (polling covers the gap).
func (r *Relay) listen(ctx context.Context) {
	bo := r.newBackoff()
	for {
		err := r.listenOnce(ctx, bo)
		if ctx.Err() != nil {
			return
		}
		d := bo.NextBackOff()
		r.cfg.Logger.Warn("outbox relay: listen connection failed; polling until it is back", "schema", r.cfg.Schema, "backoff", d.String(), "error", err)
		if !sleep(ctx, d) {
			return
		}
	}
}

func (r *Relay) listenOnce(ctx context.Context, bo *backoff.ExponentialBackOff) error {
	conn, err := pgx.ConnectConfig(ctx, r.pool.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{Channel(r.cfg.Schema)}.Sanitize()); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	bo.Reset()
	// Rows committed while no connection listened get no notification.
	r.wakeAll()
	if r.hooks.listening != nil {
		r.hooks.listening()
	}
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return fmt.Errorf("wait for notification: %w", err)
		}
		r.wakeAll()
	}
}
