// Package gymmembership activates memberships sold online or at the desk.
package gymmembership

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"
)

type membershipSold struct {
	MemberID string    `json:"member_id"`
	Plan     string    `json:"plan"`
	HomeGym  string    `json:"home_gym"`
	StartsOn time.Time `json:"starts_on"`
	Email    string    `json:"email"`
}

type activator struct {
	planMonths map[string]int
}

func (a *activator) activate(ctx context.Context, tx pgx.Tx, m membershipSold, msg *consumer.Message) error {
	months, ok := a.planMonths[m.Plan]
	if !ok {
		return consumer.Permanent(fmt.Errorf("unknown plan %q", m.Plan))
	}
	ends := m.StartsOn.AddDate(0, months, 0)
	if _, err := tx.Exec(ctx,
		`INSERT INTO memberships (member_id, plan, home_gym, starts_on, ends_on) VALUES ($1, $2, $3, $4, $5)`,
		m.MemberID, m.Plan, m.HomeGym, m.StartsOn, ends); err != nil {
		return fmt.Errorf("activate %s: %w", m.MemberID, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO access_cards (member_id, gym_id, valid_until) VALUES ($1, $2, $3)`, m.MemberID, m.HomeGym, ends); err != nil {
		return fmt.Errorf("access card: %w", err)
	}
	welcome, err := json.Marshal(map[string]string{"to": m.Email, "template": "welcome-" + m.Plan})
	if err != nil {
		return err
	}
	return outbox.Send(ctx, tx, "notify.email", &consumer.Message{ID: msg.ID + ":welcome", Key: m.MemberID, Body: welcome})
}
