// Package profiles applies profile edits, keeping a history of changes.
package profiles

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout2/profiles/platform"
)

type editor struct {
	*platform.Container
}

func (e *editor) apply(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var before string
	// The previous name is read from the pool: a read needs no claim.
	if err := e.Pool.QueryRow(ctx, `SELECT display_name FROM profiles WHERE user_id = $1`, msg.Key).Scan(&before); err != nil {
		return fmt.Errorf("read profile: %w", err)
	}
	after := string(msg.Body)
	if before == after {
		return nil
	}
	if _, err := tx.Exec(ctx, `UPDATE profiles SET display_name = $2 WHERE user_id = $1`, msg.Key, after); err != nil {
		return fmt.Errorf("update profile: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO profile_history (user_id, before, after) VALUES ($1, $2, $3)`, msg.Key, before, after); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	e.Log.Info("profile edited", "user", msg.Key)
	return nil
}

// Run wires the profile editor.
func Run(ctx context.Context, c *platform.Container, broker adapters.Broker) error {
	src, err := broker.Source(ctx, "profiles.edits", "profile-editor")
	if err != nil {
		return err
	}
	e := &editor{Container: c}
	cons, err := consumer.New(src, postgres.HandlerFunc(e.apply), consumer.Config{Name: "profile-editor"}, middleware.Idempotency(c.Claims))
	if err != nil {
		return err
	}
	return cons.Run(ctx)
}
