package tolling

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"

	"heldout8/tolling/eventstore"
)

// EventLog is the port the handlers append to.
type EventLog interface {
	Append(ctx context.Context, streamID string, expected int, events ...eventstore.Event) error
	Version(ctx context.Context, streamID string) (int, error)
}

type route func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error

// Handlers applies toll events; one route per message type.
type Handlers struct {
	events EventLog
	routes map[string]route
}

// NewHandlers returns the handlers appending to events.
func NewHandlers(events EventLog) *Handlers {
	h := &Handlers{events: events}
	h.routes = map[string]route{
		"passage.recorded":  h.passage,
		"account.topped_up": h.topUp,
	}
	return h
}

// Route dispatches msg on its type header.
func (h *Handlers) Route(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	r, ok := h.routes[msg.Headers["type"]]
	if !ok {
		return consumer.Permanent(fmt.Errorf("no route for type %q", msg.Headers["type"]))
	}
	return r(ctx, tx, msg)
}

func (h *Handlers) passage(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var p struct {
		Account string `json:"account"`
		Gantry  string `json:"gantry"`
		Cents   int64  `json:"cents"`
	}
	if err := json.Unmarshal(msg.Body, &p); err != nil {
		return consumer.Permanent(err)
	}
	acct, err := h.load(ctx, tx, p.Account)
	if err != nil {
		return err
	}
	evts, err := acct.charge(p.Gantry, p.Cents)
	if errors.Is(err, errInsufficient) {
		evts = []eventstore.Event{event("PassageUnpaid", p)}
	} else if err != nil {
		return err
	}
	return h.commit(ctx, tx, acct, evts)
}

func (h *Handlers) topUp(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var t struct {
		Account string `json:"account"`
		Cents   int64  `json:"cents"`
	}
	if err := json.Unmarshal(msg.Body, &t); err != nil {
		return consumer.Permanent(err)
	}
	acct, err := h.load(ctx, tx, t.Account)
	if err != nil {
		return err
	}
	return h.commit(ctx, tx, acct, acct.topUp(t.Cents))
}

func (h *Handlers) load(ctx context.Context, tx pgx.Tx, id string) (*account, error) {
	acct := &account{ID: id}
	if err := tx.QueryRow(ctx, `SELECT balance FROM toll_balances WHERE account_id = $1 FOR UPDATE`, id).Scan(&acct.Balance); err != nil {
		return nil, err
	}
	v, err := h.events.Version(ctx, id)
	acct.Version = v
	return acct, err
}

// commit projects the new balance and appends the events.
func (h *Handlers) commit(ctx context.Context, tx pgx.Tx, acct *account, evts []eventstore.Event) error {
	if _, err := tx.Exec(ctx, `UPDATE toll_balances SET balance = $2 WHERE account_id = $1`, acct.ID, acct.Balance); err != nil {
		return err
	}
	return h.events.Append(ctx, acct.ID, acct.Version, evts...) // want "events appended through the pool"
}
