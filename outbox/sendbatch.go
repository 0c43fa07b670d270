package outbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/oncely/oncely/consumer"
)

// Outgoing is one message of a SendBatch.
type Outgoing struct {
	// Destination is where the Relay publishes Message. Required.
	Destination string

	// Message is written as Send writes it (ID, Key, Body, Headers; other
	// fields are ignored). Required.
	Message *consumer.Message

	// Cause is the incoming message Message's ID derives from when it has
	// none, as after WithCause(ctx, Cause): a batch handler names each
	// payment's own message here. Default nil: the cause ctx carries
	// (WithCause or Caused). Ignored when Message.ID is set.
	Cause *consumer.Message
}

// SendBatch writes sends into the outbox of postgres.SchemaDefault in tx:
// see Sender.SendBatch.
func SendBatch(ctx context.Context, tx pgx.Tx, sends []Outgoing) error {
	return defaultSender.SendBatch(ctx, tx, sends)
}

// SendBatch writes sends in tx with the guarantees of calling Send for each
// in slice order, in at most two round trips whatever len(sends): for a
// batch handler that sends a message per incoming message.
//
// IDs: a message with an ID keeps it; the others derive theirs exactly as
// that sequence of Send calls would (DeriveID of the consumer name in ctx,
// the cause's ID and the number of rows tx already holds for the cause plus
// the earlier sends of the slice with the same cause).
//
// Order: rows are inserted in slice order, after SendBatch took the
// advisory lock of every distinct (destination, Key) of sends (as Send
// does, held until tx ends). It takes them in one statement sorted by lock
// number, so SendBatch calls that overlap in keys wait for each other
// instead of deadlocking; a transaction that also takes locks otherwise
// (Send, a second SendBatch) can still deadlock, which Postgres breaks by
// failing one (a retryable error). Messages with an empty Key take no lock.
//
// Round trips: the locks and the count of the causes' rows in one, the
// INSERT … SELECT FROM unnest and one notification of Channel(schema) in a
// second (one round trip in all when every message has an ID). An empty
// sends writes nothing and makes no round trip.
//
// Errors: before writing anything SendBatch validates every message and
// reports each problem (ErrNoDestination, ErrNoID, a nil Message), joined
// and wrapped with the message's index; match with errors.Is.
func (s *Sender) SendBatch(ctx context.Context, tx pgx.Tx, sends []Outgoing) error {
	if len(sends) == 0 {
		return nil
	}
	n := len(sends)
	var (
		ids, dests, keys, headers = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		bodies                    = make([][]byte, n)
		causes                    = make([]*string, n)
		derive                    = make([]cause, n) // the cause of causes[i] != nil
		lockKeys                  []string
		causeHashes               []string
		errs                      []error
	)
	seenLock := map[string]bool{}
	seenCause := map[string]bool{}
	for i, o := range sends {
		if o.Destination == "" {
			errs = append(errs, fmt.Errorf("message %d: %w", i, ErrNoDestination))
		}
		if o.Message == nil {
			errs = append(errs, fmt.Errorf("message %d: nil message", i))
			continue
		}
		m := o.Message
		ids[i], dests[i], keys[i] = m.ID, o.Destination, m.Key
		if m.ID == "" {
			c, ok := causeFrom(ctx)
			if o.Cause != nil {
				c, ok = cause{consumer: consumer.NameFromContext(ctx), id: o.Cause.ID}, true
			}
			if !ok {
				errs = append(errs, fmt.Errorf("message %d: %w", i, ErrNoID))
				continue
			}
			h := causeHash(c)
			causes[i], derive[i] = &h, c
			if !seenCause[h] {
				seenCause[h] = true
				causeHashes = append(causeHashes, h)
			}
		}
		hj, err := encodeHeaders(m.Headers)
		if err != nil {
			errs = append(errs, fmt.Errorf("message %d: headers: %w", i, err))
		}
		headers[i], bodies[i] = string(hj), nonNil(m.Body)
		if lk := sendLockKey(s.schema, o.Destination, m.Key); m.Key != "" && !seenLock[lk] {
			seenLock[lk] = true
			lockKeys = append(lockKeys, lk)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("outbox: send batch: %w", err)
	}

	b := &pgx.Batch{}
	if len(lockKeys) > 0 {
		// The lock is evaluated after the sort (a volatile function in the
		// select list of a sorted query, PostgreSQL ≥ 9.6), so every
		// SendBatch takes its locks in ascending lock number.
		b.Queue(lockAllSQL, lockKeys)
	}
	if len(causeHashes) > 0 {
		next := make(map[string]int, len(causeHashes))
		b.Queue("SELECT cause, count(*) FROM "+s.table+" WHERE cause = ANY($1) GROUP BY cause", causeHashes).Query(func(rows pgx.Rows) error {
			var (
				h string
				c int
			)
			_, err := pgx.ForEachRow(rows, []any{&h, &c}, func() error { next[h] = c; return nil })
			return err
		})
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("outbox: send batch: lock and number %d messages: %w", n, err)
		}
		for i, c := range causes {
			if c != nil {
				ids[i] = DeriveID(derive[i].consumer, derive[i].id, next[*c])
				next[*c]++
			}
		}
		b = &pgx.Batch{}
	}
	b.Queue("INSERT INTO "+s.table+` (message_id, destination, msg_key, body, headers, cause)
		SELECT id, dest, key, body, headers::jsonb, cause
		FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::text[], $6::text[]) WITH ORDINALITY AS u(id, dest, key, body, headers, cause, ord)
		ORDER BY ord`, ids, dests, keys, bodies, headers, causes)
	b.Queue("SELECT pg_notify($1, '')", s.channel)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("outbox: send batch of %d messages: %w", n, err)
	}
	return nil
}

// lockAllSQL takes the advisory locks of the lock keys $1 sorted by lock
// number, so that transactions taking overlapping sets this way queue
// instead of deadlocking.
const lockAllSQL = "SELECT pg_advisory_xact_lock(l) FROM (SELECT DISTINCT hashtextextended(k, 0) AS l FROM unnest($1::text[]) AS k) AS locks ORDER BY l"
