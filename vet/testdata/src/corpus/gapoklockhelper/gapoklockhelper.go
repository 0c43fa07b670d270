// Package gapoklockhelper is a correct corpus handler package (see
// vet/corpus_test.go): a helper takes a Redis lock on the account with
// SetNX and hands its release (a Del) back to the handler, which defers
// it; every write goes through the claim's transaction.
package gapoklockhelper

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"
)

var errBusy = errors.New("account busy")

// acquire locks one account for at most ttl and returns its unlock.
func acquire(ctx context.Context, rdb *redis.Client, account string, ttl time.Duration) (func(), error) {
	key := "lock:account:" + account
	ok, err := rdb.SetNX(ctx, key, "1", ttl).Result()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errBusy
	}
	unlock := func() { rdb.Del(context.WithoutCancel(ctx), key) }
	return unlock, nil
}

type rebalancer struct{ rdb *redis.Client }

func (r *rebalancer) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	unlock, err := acquire(ctx, r.rdb, m.Key, 10*time.Second)
	if err != nil {
		return err
	}
	defer unlock()
	_, err = tx.Exec(ctx, "UPDATE accounts SET rebalanced_at = now() WHERE id = $1", m.Key)
	return err
}

// Handler returns the rebalancing handler, behind the Postgres claim.
func Handler(rdb *redis.Client) consumer.Handler {
	return postgres.HandlerFunc((&rebalancer{rdb: rdb}).handle)
}
