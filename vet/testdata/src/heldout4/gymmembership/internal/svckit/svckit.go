// Package svckit builds the gym platform's consumers with its conventions:
// every consumer is named, logs, and deduplicates through the store it is
// given.
package svckit

import (
	"errors"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store"
)

// ErrNoStore is returned when no store was given.
var ErrNoStore = errors.New("svckit: a store is required")

type settings struct {
	cfg   consumer.Config
	store store.Store
	extra []consumer.Middleware
}

// Option adjusts a consumer built by NewConsumer.
type Option func(*settings)

// WithStore deduplicates through st. Required.
func WithStore(st store.Store) Option { return func(s *settings) { s.store = st } }

// WithConcurrency sets the number of messages handled at once; default 1.
func WithConcurrency(n int) Option { return func(s *settings) { s.cfg.Concurrency = n } }

// WithMiddleware adds m outside the idempotency middleware.
func WithMiddleware(m consumer.Middleware) Option {
	return func(s *settings) { s.extra = append(s.extra, m) }
}

// NewConsumer builds the consumer named name.
func NewConsumer(src consumer.Source, h consumer.Handler, name string, opts ...Option) (*consumer.Consumer, error) {
	s := settings{cfg: consumer.Config{Name: name}}
	for _, o := range opts {
		o(&s)
	}
	if s.store == nil {
		return nil, ErrNoStore
	}
	mws := append([]consumer.Middleware{middleware.Logging()}, s.extra...)
	mws = append(mws, middleware.Idempotency(s.store))
	return consumer.New(src, h, s.cfg, mws...)
}
