package reconcile

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"golang.org/x/sync/errgroup"
)

type bankStatement struct {
	StatementID string `json:"statement_id"`
	AccountID   string `json:"account_id"`
	Parts       []part `json:"parts"`
}

// part is one page of a statement; large statements arrive in many.
type part struct {
	Page  int     `json:"page"`
	Lines []entry `json:"lines"`
}

type entry struct {
	Ref         string `json:"ref"`
	AmountCents int64  `json:"amount_cents"`
	BookedOn    string `json:"booked_on"`
}

type reconciler struct {
	parallelism int
}

func (r *reconciler) onStatement(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var s bankStatement
	if err := json.Unmarshal(msg.Body, &s); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO statements (id, account_id) VALUES ($1, $2)`, s.StatementID, s.AccountID); err != nil {
		return fmt.Errorf("reconcile: statement %s: %w", s.StatementID, err)
	}
	g, gctx := errgroup.WithContext(ctx)
	sem := make(chan struct{}, r.parallelism)
	for _, p := range s.Parts {
		sem <- struct{}{}
		g.Go(func() error { // want "pages applied on the claim's transaction from concurrent errgroup goroutines; pgx.Tx is not safe for concurrent use"
			defer func() { <-sem }()
			return applyPart(gctx, tx, s.StatementID, p)
		})
	}
	return g.Wait()
}

func applyPart(ctx context.Context, tx pgx.Tx, statementID string, p part) error {
	for _, e := range p.Lines {
		if _, err := tx.Exec(ctx,
			`INSERT INTO statement_lines (statement_id, page, ref, amount_cents, booked_on) VALUES ($1, $2, $3, $4, $5)`,
			statementID, p.Page, e.Ref, e.AmountCents, e.BookedOn); err != nil {
			return fmt.Errorf("reconcile: page %d line %s: %w", p.Page, e.Ref, err)
		}
	}
	return nil
}
