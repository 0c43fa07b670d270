// Package onboarding creates profiles for new users.
package onboarding

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout9/users/internal/mail"
	"heldout9/users/internal/typed"
)

// Registered is a new account.
type Registered struct {
	User  string `json:"user"`
	Email string `json:"email"`
	Name  string `json:"name"`
}

// Deleted is a closed account.
type Deleted struct {
	User string `json:"user"`
}

// Onboarding holds the onboarding consumers' dependencies.
type Onboarding struct {
	mail *mail.Mailer
}

func (o *Onboarding) registered(ctx context.Context, tx pgx.Tx, id string, r Registered) error {
	if _, err := tx.Exec(ctx, `INSERT INTO profiles (user_id, email, name) VALUES ($1, $2, $3)`, r.User, r.Email, r.Name); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO onboarding_steps (user_id, step) VALUES ($1, 'welcome')`, r.User); err != nil {
		return err
	}
	return o.mail.Welcome(r.Email, r.Name) // want "."
}

func (o *Onboarding) deleted(ctx context.Context, tx pgx.Tx, id string, d Deleted) error {
	_, err := tx.Exec(ctx, `DELETE FROM profiles WHERE user_id = $1`, d.User)
	return err
}

// Start wires the onboarding consumers.
func Start(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, m *mail.Mailer) ([]*consumer.Consumer, error) {
	st, err := postgres.New(pool)
	if err != nil {
		return nil, err
	}
	o := &Onboarding{mail: m}
	specs := []struct {
		topic string
		h     consumer.Handler
	}{
		{"users.registered", typed.Handler(o.registered)},
		{"users.deleted", typed.Handler(o.deleted)},
	}
	var cs []*consumer.Consumer
	for _, s := range specs {
		src, err := broker.Source(ctx, s.topic, "onboarding")
		if err != nil {
			return nil, err
		}
		c, err := consumer.New(src, s.h, consumer.Config{Name: "onboarding-" + s.topic}, middleware.Idempotency(st))
		if err != nil {
			return nil, err
		}
		cs = append(cs, c)
	}
	return cs, nil
}
