// Package people applies HR changes to employee records.
package people

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout9/hr/internal/deps"
)

type transfer struct {
	Employee string `json:"employee"`
	FromTeam string `json:"from_team"`
	ToTeam   string `json:"to_team"`
}

func transferred(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var t transfer
	if err := json.Unmarshal(msg.Body, &t); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE employees SET team = $2 WHERE id = $1`, t.Employee, t.ToTeam); err != nil {
		return err
	}
	if _, err := deps.DB(ctx).Exec(ctx, `UPDATE teams SET headcount = headcount - 1 WHERE id = $1`, t.FromTeam); err != nil { // want "."
		return err
	}
	_, err := tx.Exec(ctx, `UPDATE teams SET headcount = headcount + 1 WHERE id = $1`, t.ToTeam)
	return err
}

func hired(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var h struct {
		Employee string `json:"employee"`
		Team     string `json:"team"`
	}
	if err := json.Unmarshal(msg.Body, &h); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO employees (id, team) VALUES ($1, $2)`, h.Employee, h.Team); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `UPDATE teams SET headcount = headcount + 1 WHERE id = $1`, h.Team)
	return err
}

// Start wires the HR consumers.
func Start(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	for topic, h := range map[string]consumer.Handler{
		"hr.transferred": postgres.HandlerFunc(transferred),
		"hr.hired":       postgres.HandlerFunc(hired),
	} {
		src, err := broker.Source(ctx, topic, "people")
		if err != nil {
			return err
		}
		c, err := consumer.New(src, h, consumer.Config{Name: "people-" + topic}, deps.Inject(pool), middleware.Idempotency(st))
		if err != nil {
			return err
		}
		go c.Run(ctx)
	}
	return nil
}
