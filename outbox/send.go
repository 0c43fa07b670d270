package outbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

// Errors Send and SendBatch return before they write anything.
var (
	// ErrNoID: the message has no ID and the context carries no cause
	// (WithCause or Caused) to derive one from.
	ErrNoID = errors.New("outbox: message has no ID and the context has no cause to derive one from")
	// ErrNoDestination: destination is empty.
	ErrNoDestination = errors.New("outbox: empty destination")
)

// Sender writes outgoing messages into the outbox table of one schema. The
// zero value is not usable; use NewSender. A Sender is safe for concurrent
// use (each pgx.Tx is not).
type Sender struct {
	schema  string
	table   string
	channel string
}

var defaultSender = &Sender{
	schema:  postgres.SchemaDefault,
	table:   pgx.Identifier{postgres.SchemaDefault, Table}.Sanitize(),
	channel: Channel(postgres.SchemaDefault),
}

// Table is the outbox table's name in its schema (migration 0002_outbox).
const Table = "outbox"

// NewSender returns a Sender for schema ("" means postgres.SchemaDefault),
// validated like postgres.Config.Schema.
func NewSender(schema string) (*Sender, error) {
	if schema == "" {
		schema = postgres.SchemaDefault
	}
	if err := postgres.ValidateSchema(schema); err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	return &Sender{schema: schema, table: pgx.Identifier{schema, Table}.Sanitize(), channel: Channel(schema)}, nil
}

// Channel is the LISTEN/NOTIFY channel Send notifies and a Relay of schema
// listens on: "oncely_outbox.<schema>" when that fits Postgres's identifier
// limit (63 bytes, schemas of up to 49 bytes); otherwise the schema's first
// 32 bytes, a dot and 16 hex digits of its SHA-256, 63 bytes in all. A valid
// schema name has no dot, so the two forms never meet and every schema gets
// its own channel.
func Channel(schema string) string {
	const prefix = "oncely_outbox."
	if len(prefix)+len(schema) <= maxIdentifier {
		return prefix + schema
	}
	sum := sha256.Sum256([]byte(schema))
	return prefix + schema[:maxIdentifier-len(prefix)-17] + "." + hex.EncodeToString(sum[:8])
}

// maxIdentifier is the longest Postgres identifier, in bytes (NAMEDATALEN-1):
// pg_notify refuses a longer channel name.
const maxIdentifier = 63

// Send writes msg into the outbox of postgres.SchemaDefault in tx: see
// Sender.Send.
func Send(ctx context.Context, tx pgx.Tx, destination string, msg *consumer.Message) error {
	return defaultSender.Send(ctx, tx, destination, msg)
}

// Send writes msg (ID, Key, Body, Headers; other fields are ignored) as a
// row to be published to destination, in tx: the row commits with the
// handler's claim and effects, or not at all. A Relay publishes it after the
// commit, with the same ID, at least once.
//
// ID: msg.ID when set; otherwise derived (DeriveID) from the consumer name
// in ctx, the cause set by WithCause or Caused, and the number of messages
// this transaction already sent for that cause. A retried run of the same
// incoming message therefore derives the same IDs in the same order, so a
// downstream consumer dedupes a re-published copy.
//
// Order: Sends of one (destination, Key) serialise on a transaction-level
// advisory lock held until tx ends, so their rows are numbered in commit
// order and the relay publishes them in that order. An empty Key has no
// order. A handler sending to several keys takes several locks; two
// handlers taking them in opposite orders may deadlock, which Postgres
// breaks by failing one (a retryable error). SendBatch takes them sorted.
//
// Send also notifies Channel(schema) (delivered on commit) to wake relays.
func (s *Sender) Send(ctx context.Context, tx pgx.Tx, destination string, msg *consumer.Message) error {
	if destination == "" {
		return ErrNoDestination
	}
	if msg == nil {
		return errors.New("outbox: nil message")
	}
	var cause *string
	id := msg.ID
	if id == "" {
		c, ok := causeFrom(ctx)
		if !ok {
			return ErrNoID
		}
		h := causeHash(c)
		cause = &h
		var n int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM "+s.table+" WHERE cause = $1", h).Scan(&n); err != nil {
			return fmt.Errorf("outbox: send: number the message: %w", err)
		}
		id = DeriveID(c.consumer, c.id, n)
	}
	hj, err := encodeHeaders(msg.Headers)
	if err != nil {
		return fmt.Errorf("outbox: send: headers: %w", err)
	}
	body := nonNil(msg.Body)
	b := &pgx.Batch{}
	if msg.Key != "" {
		b.Queue("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", sendLockKey(s.schema, destination, msg.Key))
	}
	b.Queue("INSERT INTO "+s.table+" (message_id, destination, msg_key, body, headers, cause) VALUES ($1, $2, $3, $4, $5, $6)",
		id, destination, msg.Key, body, hj, cause)
	b.Queue("SELECT pg_notify($1, '')", s.channel)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("outbox: send %s to %s: %w", id, destination, err)
	}
	return nil
}

// encodeHeaders is the headers column of a message with headers h.
func encodeHeaders(h map[string]string) ([]byte, error) {
	if h == nil {
		h = map[string]string{}
	}
	return json.Marshal(h)
}

// nonNil is the body column of a message with body b (NOT NULL).
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// sendLockKey names the advisory lock Sends of one key serialise on.
func sendLockKey(schema, destination, key string) string {
	return "oncely.outbox.send\n" + schema + "\n" + destination + "\n" + key
}

// DeriveID is the ID Send gives the index-th (from 0) message without an ID
// that one run of consumerName's handler sends for the incoming message
// incomingID: "ob-" and 32 hex digits of a SHA-256 over the three. It is
// stable across retries and distinct per consumer, so two consumers of one
// message never derive the same ID.
func DeriveID(consumerName, incomingID string, index int) string {
	h := sha256.New()
	for _, s := range []string{consumerName, incomingID, strconv.Itoa(index)} {
		h.Write([]byte(strconv.Itoa(len(s))))
		h.Write([]byte{':'})
		h.Write([]byte(s))
	}
	return "ob-" + hex.EncodeToString(h.Sum(nil))[:32]
}

type cause struct{ consumer, id string }

type causeKey struct{}

func causeHash(c cause) string {
	return DeriveID(c.consumer, c.id, -1)
}

func causeFrom(ctx context.Context) (cause, bool) {
	c, ok := ctx.Value(causeKey{}).(cause)
	return c, ok
}

// WithCause returns ctx telling Send to derive the IDs of messages sent
// without one from in, the incoming message being handled, and the consumer
// name in ctx (consumer.NameFromContext). Use it in batch handlers, once per
// incoming message; single-message handlers can use Caused instead.
func WithCause(ctx context.Context, in *consumer.Message) context.Context {
	return context.WithValue(ctx, causeKey{}, cause{consumer: consumer.NameFromContext(ctx), id: in.ID})
}

// Caused wraps h so that each call's context carries its message as the
// cause (WithCause). Put it innermost, around a postgres.HandlerFunc.
func Caused(h consumer.Handler) consumer.Handler {
	return consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
		return h.Handle(WithCause(ctx, msg), msg)
	})
}
