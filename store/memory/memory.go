// Package memory is an in-process store.Store for tests, examples and
// single-process tools. It keeps exactly the claim-first semantics of the
// Postgres store (store/postgres), so a handler proven against it behaves the
// same way in production:
//
//   - a claim is per (consumer, message ID);
//   - Process claims first, then runs fn; fn's nil result commits the claim,
//     an error (or a panic) releases it so a retry can run;
//   - a concurrent Process of the same key waits until the first one ends,
//     then sees the committed claim (a duplicate) or, when the first failed,
//     claims the message itself. Concurrent duplicates therefore run fn once.
//
// What it cannot do is undo fn's effects: Postgres rolls back the writes fn
// made in the claim's transaction, while this store only releases the claim.
// Handlers tested against it should apply their effect as their last step.
// Claims live in process memory and vanish with the process.
package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store"
)

// Config configures a Store. The zero value is valid: claims are kept until
// the Store is dropped and the clock is time.Now.
type Config struct {
	// Retention is how long a committed claim is kept. An older claim no
	// longer makes a redelivery a duplicate, and Prune frees it. It must
	// exceed the longest broker retry delay plus the expected dead-letter
	// replay delay, as for the Postgres store. Zero (the default) keeps claims
	// forever.
	Retention time.Duration

	// Now is the clock used to stamp and expire claims. Defaults to time.Now.
	Now func() time.Time
}

// Store is an in-memory store.Store. Its methods are safe for concurrent use.
// Create one with New.
type Store struct {
	retention time.Duration
	now       func() time.Time

	mu     sync.Mutex
	claims map[claimKey]*claim
}

var (
	_ store.BatchStore = (*Store)(nil)
	_ consumer.Prober  = (*Store)(nil)
)

type claimKey struct{ consumer, id string }

// claim is one (consumer, id) row. While fn runs, committed is false and done
// is open; waiters block on done.
type claim struct {
	done      chan struct{}
	committed bool
	at        time.Time
}

// New returns an empty Store configured by cfg, or an error naming the invalid
// field.
func New(cfg Config) (*Store, error) {
	if cfg.Retention < 0 {
		return nil, fmt.Errorf("memory store: invalid config: Config.Retention must be >= 0 (0 keeps claims forever), got %s", cfg.Retention)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Store{retention: cfg.Retention, now: cfg.Now, claims: make(map[claimKey]*claim)}, nil
}

// Process claims (consumerName, messageID) and runs fn, as store.Store
// documents. fn receives ctx unchanged. An ID longer than
// store.MaxMessageIDLength, or an empty consumer name or ID, is refused with
// a consumer.Permanent error without calling fn. When ctx is done before the
// claim is taken (including while waiting for a concurrent Process of the
// same key), Process returns an error wrapping ctx.Err() and does not call fn.
// A panic in fn releases the claim and propagates.
func (s *Store) Process(ctx context.Context, consumerName, messageID string, fn func(ctx context.Context) error) (duplicate bool, err error) {
	if err := checkID(consumerName, messageID); err != nil {
		return false, consumer.Permanent(err)
	}
	k := claimKey{consumerName, messageID}
	c, err := s.claim(ctx, k)
	if c == nil || err != nil {
		return c == nil && err == nil, err
	}
	committed := false
	defer func() { s.end(k, c, committed) }()
	if err := fn(ctx); err != nil {
		return false, err
	}
	committed = true
	return false, nil
}

// checkID refuses what Process refuses before claiming.
func checkID(consumerName, messageID string) error {
	switch {
	case consumerName == "":
		return errors.New("memory store: empty consumer name")
	case messageID == "":
		return errors.New("memory store: empty message ID")
	case len(messageID) > store.MaxMessageIDLength:
		return fmt.Errorf("memory store: message ID is %d bytes, over the %d-byte limit", len(messageID), store.MaxMessageIDLength)
	}
	return nil
}

// claim takes k's claim, waiting for a concurrent one to end. It returns
// nil and no error when k was claimed and committed before.
func (s *Store) claim(ctx context.Context, k claimKey) (*claim, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("memory store: claiming %q: %w", k.id, err)
		}
		s.mu.Lock()
		cur := s.claims[k]
		switch {
		case cur == nil || cur.committed && s.expired(cur, s.now()):
			c := &claim{done: make(chan struct{})}
			s.claims[k] = c
			s.mu.Unlock()
			return c, nil
		case cur.committed:
			s.mu.Unlock()
			return nil, nil
		default:
			s.mu.Unlock()
			select {
			case <-cur.done:
			case <-ctx.Done():
				return nil, fmt.Errorf("memory store: waiting for a concurrent claim of %q: %w", k.id, ctx.Err())
			}
		}
	}
}

// end commits or releases claim c of k, and wakes its waiters.
func (s *Store) end(k claimKey, c *claim, committed bool) {
	s.mu.Lock()
	if committed {
		c.committed = true
		c.at = s.now()
	} else {
		delete(s.claims, k)
	}
	close(c.done)
	s.mu.Unlock()
}

// ProcessBatch claims every ID of ids and runs fn with the positions of
// those claimed now, as store.BatchStore documents. IDs are claimed in
// sorted order, so concurrent batches cannot deadlock. An empty or
// over-long ID is named in a consumer.BatchError as permanent, without
// calling fn. A panic in fn releases the claims and propagates.
func (s *Store) ProcessBatch(ctx context.Context, consumerName string, ids []string, fn func(ctx context.Context, fresh []int) error) ([]int, error) {
	if consumerName == "" {
		return nil, consumer.Permanent(errors.New("memory store: empty consumer name"))
	}
	bad := map[int]error{}
	for i, id := range ids {
		if err := checkID(consumerName, id); err != nil {
			bad[i] = consumer.Permanent(err)
		}
	}
	if len(bad) > 0 {
		return nil, consumer.BatchError{Failed: bad}
	}
	first := make(map[string]int, len(ids))
	for i, id := range ids {
		if _, seen := first[id]; !seen {
			first[id] = i
		}
	}
	order := make([]string, 0, len(first))
	for id := range first {
		order = append(order, id)
	}
	slices.Sort(order)
	type held struct {
		k claimKey
		c *claim
	}
	var claims []held
	committed := false
	defer func() {
		for _, h := range claims {
			s.end(h.k, h.c, committed)
		}
	}()
	var fresh []int
	for _, id := range order {
		k := claimKey{consumerName, id}
		c, err := s.claim(ctx, k)
		if err != nil {
			return nil, err
		}
		if c != nil {
			claims = append(claims, held{k, c})
			fresh = append(fresh, first[id])
		}
	}
	slices.Sort(fresh)
	if len(fresh) == 0 {
		return nil, nil
	}
	if err := fn(ctx, fresh); err != nil {
		return nil, err
	}
	committed = true
	return fresh, nil
}

// Probe implements consumer.Prober. The memory store is never down: it
// returns nil, or ctx's error when ctx is already done.
func (s *Store) Probe(ctx context.Context) error { return ctx.Err() }

// Claimed reports whether (consumerName, messageID) has a committed claim
// that has not expired.
func (s *Store) Claimed(consumerName, messageID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.claims[claimKey{consumerName, messageID}]
	return c != nil && c.committed && !s.expired(c, s.now())
}

// Len returns the number of committed claims held, expired or not.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.claims {
		if c.committed {
			n++
		}
	}
	return n
}

// Prune removes the committed claims older than Config.Retention and returns
// how many it removed. Claims still being processed are never removed. With
// no Retention it removes nothing.
func (s *Store) Prune() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	n := 0
	for k, c := range s.claims {
		if c.committed && s.expired(c, now) {
			delete(s.claims, k)
			n++
		}
	}
	return n
}

// expired reports whether committed claim c is past retention at now.
func (s *Store) expired(c *claim, now time.Time) bool {
	return s.retention > 0 && now.Sub(c.at) >= s.retention
}
