package alerts

import (
	"context"
	"fmt"
	"log/slog"
	"net/smtp"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
)

// sender delivers pending alerts by e-mail, one at a time, and announces
// each delivery on NATS for the on-call bot.
type sender struct {
	pool     *pgxpool.Pool
	nc       *nats.Conn
	smtpAddr string
	from     string
	log      *slog.Logger
}

func (s *sender) run(ctx context.Context) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for {
			sent, err := s.sendOne(ctx)
			if err != nil {
				s.log.Warn("alerts: send", "err", err)
			}
			if !sent {
				break
			}
		}
	}
}

// sendOne sends the oldest pending alert and marks it sent in one
// transaction; a crash between the two sends it again, which on-call
// prefers to missing it.
func (s *sender) sendOne(ctx context.Context) (bool, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(ctx)
	var id, to, subject string
	err = tx.QueryRow(ctx, `SELECT id, recipient, subject FROM pending_alerts WHERE sent_at IS NULL
		ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED`).Scan(&id, &to, &subject)
	if err != nil {
		return false, nil // nothing pending
	}
	body := "From: " + s.from + "\r\nTo: " + to + "\r\nSubject: " + subject + "\r\n\r\n" + subject + "\r\n"
	if err := smtp.SendMail(s.smtpAddr, nil, s.from, []string{to}, []byte(body)); err != nil {
		return false, fmt.Errorf("alerts: mail %s: %w", id, err)
	}
	if _, err := tx.Exec(ctx, `UPDATE pending_alerts SET sent_at = now() WHERE id = $1`, id); err != nil {
		return false, err
	}
	if err := tx.Commit(ctx); err != nil {
		return false, err
	}
	if err := s.nc.Publish("alerts.sent", []byte(id)); err != nil {
		s.log.Warn("alerts: announce", "alert", id, "err", err)
	}
	return true, nil
}
