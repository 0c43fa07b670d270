// Package contacts keeps the CRM's contacts.
package contacts

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

// Contact is a CRM contact.
type Contact struct {
	ID    string `json:"id"`
	Email string `json:"email"`
}

// Upsert stores a contact.
func Upsert(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var c Contact
	if err := json.Unmarshal(msg.Body, &c); err != nil {
		return consumer.Permanent(err)
	}
	_, err := tx.Exec(ctx, `INSERT INTO contacts (id, email) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET email = EXCLUDED.email`, c.ID, c.Email)
	return err
}

// Merge merges two contacts.
func Merge(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var m struct{ Into, From string }
	if err := json.Unmarshal(msg.Body, &m); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE deals SET contact = $1 WHERE contact = $2`, m.Into, m.From); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `DELETE FROM contacts WHERE id = $1`, m.From)
	return err
}
