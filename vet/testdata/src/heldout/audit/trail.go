// Package audit keeps the compliance audit trail of account changes.
package audit

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type auditRow struct {
	tx      pgx.Tx
	actor   string
	action  string
	subject string
	at      time.Time
}

// Trail buffers audit rows and writes them in groups: the audit table is
// hot, and one insert per change was too slow.
type Trail struct {
	mu      sync.Mutex
	pending []auditRow
	log     *slog.Logger
}

type accountChanged struct {
	Actor   string `json:"actor"`
	Action  string `json:"action"`
	Account string `json:"account"`
}

func (t *Trail) onAccountChanged(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev accountChanged
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE accounts SET version = version + 1 WHERE id = $1`, ev.Account); err != nil {
		return err
	}
	t.mu.Lock()
	t.pending = append(t.pending, auditRow{tx: tx, actor: ev.Actor, action: ev.Action, subject: ev.Account, at: time.Now()}) // want "tx buffered for a later flush"
	t.mu.Unlock()
	return nil
}

// flushLoop writes the buffered rows every interval until ctx ends.
func (t *Trail) flushLoop(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		t.mu.Lock()
		rows := t.pending
		t.pending = nil
		t.mu.Unlock()
		for _, r := range rows {
			if _, err := r.tx.Exec(ctx,
				`INSERT INTO audit_trail (actor, action, subject, at) VALUES ($1, $2, $3, $4)`,
				r.actor, r.action, r.subject, r.at); err != nil {
				t.log.Error("audit flush", "err", err)
			}
		}
	}
}
