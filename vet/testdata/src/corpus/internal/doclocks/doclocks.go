// Package doclocks is the corpus's Redis helper package (see
// vet/corpus_test.go): Lock takes a document's lock (SetNX with a TTL),
// which its caller releases; MarkSeen records a message as handled.
package doclocks

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrBusy says another replica holds the lock.
var ErrBusy = errors.New("doclocks: busy")

// Locks holds the Redis client.
type Locks struct{ RDB *redis.Client }

// Lock takes doc's lock for ttl; the caller deletes "lock:"+doc.
func (l *Locks) Lock(ctx context.Context, doc string, ttl time.Duration) error {
	ok, err := l.RDB.SetNX(ctx, "lock:"+doc, "1", ttl).Result()
	if err != nil {
		return err
	}
	if !ok {
		return ErrBusy
	}
	return nil
}

// MarkSeen records id as handled for a day; it reports false when it was.
func (l *Locks) MarkSeen(ctx context.Context, id string) (bool, error) {
	return l.RDB.SetNX(ctx, "seen:"+id, "1", 24*time.Hour).Result()
}
