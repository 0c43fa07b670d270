// Package library records book loans and expires stale holds.
package library

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type loanOpened struct {
	Copy   string `json:"copy"`
	Patron string `json:"patron"`
}

type loans struct{}

func (loans) Handle(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errors.New("library: claim transaction missing")
	}
	var l loanOpened
	if err := json.Unmarshal(msg.Body, &l); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO loans (copy, patron, due) VALUES ($1, $2, now() + interval '21 days')`, l.Copy, l.Patron); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `DELETE FROM holds WHERE copy = $1 AND patron = $2`, l.Copy, l.Patron)
	return err
}
