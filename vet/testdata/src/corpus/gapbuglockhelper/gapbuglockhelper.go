// Package gapbuglockhelper is a corpus handler package with a bug (see
// vet/corpus_test.go): a helper remembers each message in Redis with SetNX
// and hands back a no-op cleanup, so the key is never released: it is a
// write outside the claim's transaction that stays when the transaction
// rolls back.
package gapbuglockhelper

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"
)

// remember marks id as seen for a day and returns a cleanup to call when
// done.
func remember(ctx context.Context, rdb *redis.Client, id string) (func(), error) {
	if _, err := rdb.SetNX(ctx, "seen:"+id, "1", 24*time.Hour).Result(); err != nil { // want "SetNX"
		return nil, err
	}
	return func() {}, nil
}

type payouts struct{ rdb *redis.Client }

func (p *payouts) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	done, err := remember(ctx, p.rdb, m.ID)
	if err != nil {
		return err
	}
	defer done()
	_, err = tx.Exec(ctx, "INSERT INTO payouts (id) VALUES ($1)", m.ID)
	return err
}

// Handler returns the payout handler, behind the Postgres claim.
func Handler(rdb *redis.Client) consumer.Handler {
	return postgres.HandlerFunc((&payouts{rdb: rdb}).handle)
}
