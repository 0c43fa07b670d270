// Package repo holds the accounts service's repositories.
package repo

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Execer runs statements.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
}

// Limits keeps per-account spending limits.
type Limits struct{ db Execer }

// NewLimits returns limits over db.
func NewLimits(db Execer) *Limits { return &Limits{db: db} }

// WithTx returns limits bound to tx.
func (l *Limits) WithTx(tx pgx.Tx) *Limits { return &Limits{db: tx} }

// Recalc recomputes account's limit from its history.
func (l *Limits) Recalc(ctx context.Context, account string) error {
	_, err := l.db.Exec(ctx, `UPDATE limits SET amount = (SELECT sum(amount) / 10 FROM history WHERE account = $1) WHERE account = $1`, account)
	return err
}

// Profiles keeps account profiles.
type Profiles struct{ db Execer }

// NewProfiles returns profiles over db.
func NewProfiles(db Execer) *Profiles { return &Profiles{db: db} }

// WithTx returns profiles bound to tx.
func (p *Profiles) WithTx(tx pgx.Tx) *Profiles { return &Profiles{db: tx} }

// Touch records account's last activity.
func (p *Profiles) Touch(ctx context.Context, account string) error {
	_, err := p.db.Exec(ctx, `UPDATE profiles SET active_at = now() WHERE account = $1`, account)
	return err
}
