// Package consumers holds the ledger's message handlers.
package consumers

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"

	"heldout9/ledgerx/internal/uow"
)

// Postings applies posting messages to the ledger.
type Postings struct {
	tables *uow.Tables
	pool   *pgxpool.Pool

	mu     sync.Mutex
	limits map[string]int64 // per-account limits, read-through cache
}

// NewPostings returns the handler set.
func NewPostings(pool *pgxpool.Pool) *Postings {
	return &Postings{tables: uow.New(pool), pool: pool, limits: map[string]int64{}}
}

type posting struct {
	Account string `json:"account"`
	Amount  int64  `json:"amount"`
}

func (p *Postings) limit(ctx context.Context, account string) (int64, error) {
	p.mu.Lock()
	l, ok := p.limits[account]
	p.mu.Unlock()
	if ok {
		return l, nil
	}
	if err := p.pool.QueryRow(ctx, `SELECT credit_limit FROM accounts WHERE id = $1`, account).Scan(&l); err != nil {
		return 0, err
	}
	p.mu.Lock()
	p.limits[account] = l
	p.mu.Unlock()
	return l, nil
}

// Apply is the posting handler.
func (p *Postings) Apply(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var in posting
	if err := json.Unmarshal(msg.Body, &in); err != nil {
		return consumer.Permanent(err)
	}
	l, err := p.limit(ctx, in.Account)
	if err != nil {
		return err
	}
	if in.Amount > l {
		return consumer.Permanent(errOverLimit)
	}
	t := p.tables
	t = t.In(tx)
	if seen, err := t.Entries.Exists(ctx, msg.ID); err != nil || seen {
		return err
	}
	return t.Entries.Save(ctx, uow.Entry{ID: msg.ID, Account: in.Account, Amount: in.Amount})
}

// Reverse books the opposite entry.
func (p *Postings) Reverse(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var in posting
	if err := json.Unmarshal(msg.Body, &in); err != nil {
		return consumer.Permanent(err)
	}
	work := p.tables.In(tx)
	return work.Entries.Save(ctx, uow.Entry{ID: "rev-" + msg.ID, Account: in.Account, Amount: -in.Amount})
}
