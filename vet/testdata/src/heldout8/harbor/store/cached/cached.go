// Package cached decorates a berths.Repository with a process-wide read
// cache of berth dimensions.
package cached

import (
	"context"
	"sync"
	"time"

	"heldout8/harbor/berths"
)

// Cache holds berths by ID; it only ever saves a read, and an Assign drops
// the entry, so a rolled-back Assign costs one extra read.
type Cache struct {
	m sync.Map
}

// Warm loads ids through repo.
func (c *Cache) Warm(ctx context.Context, repo berths.Repository, ids []string) error {
	for _, id := range ids {
		b, err := repo.Find(ctx, id)
		if err != nil {
			return err
		}
		c.m.Store(id, b)
	}
	return nil
}

type repo struct {
	next  berths.Repository
	cache *Cache
}

// Wrap returns next behind cache.
func Wrap(next berths.Repository, cache *Cache) berths.Repository {
	return &repo{next: next, cache: cache}
}

func (r *repo) Find(ctx context.Context, id string) (berths.Berth, error) {
	if b, ok := r.cache.m.Load(id); ok {
		return b.(berths.Berth), nil
	}
	b, err := r.next.Find(ctx, id)
	if err == nil {
		r.cache.m.Store(id, b)
	}
	return b, err
}

func (r *repo) Assign(ctx context.Context, id, vessel string, until time.Time) error {
	r.cache.m.Delete(id)
	return r.next.Assign(ctx, id, vessel, until)
}
