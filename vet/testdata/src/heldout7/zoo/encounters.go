package zoo

import (
	"bytes"
	"context"
	"fmt"
	"text/template"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type encounter struct {
	Visitor string    `json:"visitor"`
	Email   string    `json:"email"`
	Animal  string    `json:"animal"`
	At      time.Time `json:"at"`
	Guests  int       `json:"guests"`
}

var confirmation = template.Must(template.New("confirm").Parse(
	"Dear {{.Visitor}},\n\nyour encounter with the {{.Animal}} is booked for {{.At.Format \"Mon 2 Jan 15:04\"}} ({{.Guests}} guests).\n"))

// bookEncounter books the session and queues the confirmation mail in the
// same transaction; the mailer sends it after the commit.
func bookEncounter(ctx context.Context, tx pgx.Tx, e encounter) error {
	var left int
	if err := tx.QueryRow(ctx, `UPDATE sessions SET places = places - $3 WHERE animal = $1 AND starts_at = $2 AND places >= $3 RETURNING places`,
		e.Animal, e.At, e.Guests).Scan(&left); err != nil {
		return consumer.Permanent(fmt.Errorf("no places for %s at %s: %w", e.Animal, e.At, err))
	}
	var body bytes.Buffer
	if err := confirmation.Execute(&body, e); err != nil {
		return consumer.Permanent(err)
	}
	_, err := tx.Exec(ctx, `INSERT INTO mail_queue (recipient, subject, body) VALUES ($1, $2, $3)`,
		e.Email, "Your "+e.Animal+" encounter", body.String())
	return err
}
