// Package synonyms reads the synonym table cached in Redis and guards
// reindexing of one document with a short Redis lock.
package synonyms

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrBusy means another replica holds the document's lock.
var ErrBusy = errors.New("document locked by another replica")

// Cache reads synonyms.
type Cache struct{ RDB *redis.Client }

// For returns the synonyms of term.
func (c *Cache) For(ctx context.Context, term string) []string {
	s, err := c.RDB.Get(ctx, "syn:"+term).Result()
	if err != nil || s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// Lock takes doc's lock for ttl.
func (c *Cache) Lock(ctx context.Context, doc string, ttl time.Duration) error {
	ok, err := c.RDB.SetNX(ctx, "lock:doc:"+doc, "1", ttl).Result()
	if err != nil {
		return err
	}
	if !ok {
		return ErrBusy
	}
	return nil
}
