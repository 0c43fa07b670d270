// Package middleware is a stub of oncely's middleware package.
package middleware

import (
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store"
)

func Idempotency(s store.Store) consumer.Middleware {
	return func(next consumer.Handler) consumer.Handler { return consumer.Deduplicating(next) }
}

func Logging() consumer.Middleware {
	return func(next consumer.Handler) consumer.Handler { return next }
}
