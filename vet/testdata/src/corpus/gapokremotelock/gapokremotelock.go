// Package gapokremotelock is a correct corpus handler package (see
// vet/corpus_test.go): the handler takes a document's lock through a
// helper package's Lock (SetNX with a TTL) and releases it with a deferred
// Del: a lock around the work, which a redelivery takes again.
package gapokremotelock

import (
	"context"
	"time"

	"corpus/internal/doclocks"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"
)

type indexer struct {
	locks *doclocks.Locks
	rdb   *redis.Client
}

func (ix *indexer) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if err := ix.locks.Lock(ctx, m.Key, 30*time.Second); err != nil {
		return err
	}
	defer ix.rdb.Del(context.WithoutCancel(ctx), "lock:"+m.Key)
	_, err := tx.Exec(ctx, `UPDATE documents SET indexed = now() WHERE id = $1`, m.Key)
	return err
}

// New returns the indexer behind the Postgres claim.
func New(rdb *redis.Client) consumer.Handler {
	return postgres.HandlerFunc((&indexer{locks: &doclocks.Locks{RDB: rdb}, rdb: rdb}).handle)
}
