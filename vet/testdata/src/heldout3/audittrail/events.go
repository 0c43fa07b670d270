package audittrail

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// querier is satisfied by the pool and by a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
}

type permissionChanged struct {
	EventID   string    `json:"event_id"`
	Actor     string    `json:"actor"`
	Subject   string    `json:"subject"`
	Role      string    `json:"role"`
	Granted   bool      `json:"granted"`
	ChangedAt time.Time `json:"changed_at"`
}

func insertEvent(ctx context.Context, q querier, e permissionChanged) error {
	verb := "revoke"
	if e.Granted {
		verb = "grant"
	}
	if _, err := q.Exec(ctx,
		`INSERT INTO permission_audit (event_id, actor, subject, role, verb, changed_at) VALUES ($1, $2, $3, $4, $5, $6)
		 ON CONFLICT (event_id) DO NOTHING`,
		e.EventID, e.Actor, e.Subject, e.Role, verb, e.ChangedAt); err != nil {
		return fmt.Errorf("audittrail: event %s: %w", e.EventID, err)
	}
	return nil
}
