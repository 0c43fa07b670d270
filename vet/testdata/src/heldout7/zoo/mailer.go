package zoo

import (
	"context"
	"log/slog"
	"net/smtp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// mailer drains the mail queue: each mail is sent, then marked sent in a
// transaction of its own that holds the row's lock, so one process sends it.
type mailer struct {
	pool *pgxpool.Pool
	send func(addr string, a smtp.Auth, from string, to []string, msg []byte) error
	addr string
	from string
	log  *slog.Logger
}

func (m *mailer) loop(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for {
				sent, err := m.sendOne(ctx)
				if err != nil {
					m.log.Warn("mail queue", "err", err)
				}
				if !sent {
					break
				}
			}
		}
	}
}

func (m *mailer) sendOne(ctx context.Context) (bool, error) {
	sent := false
	err := pgx.BeginFunc(ctx, m.pool, func(tx pgx.Tx) error {
		var id int64
		var to, subject, body string
		if err := tx.QueryRow(ctx, `SELECT id, recipient, subject, body FROM mail_queue
			WHERE sent_at IS NULL ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED`).Scan(&id, &to, &subject, &body); err != nil {
			return nil // empty queue
		}
		msg := []byte("From: " + m.from + "\r\nTo: " + to + "\r\nSubject: " + subject + "\r\n\r\n" + body)
		if err := m.send(m.addr, nil, m.from, []string{to}, msg); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE mail_queue SET sent_at = now() WHERE id = $1`, id)
		sent = err == nil
		return err
	})
	return sent, err
}
