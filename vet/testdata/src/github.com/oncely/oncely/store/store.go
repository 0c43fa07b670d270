// Package store is a stub of oncely's store package.
package store

import "context"

type Store interface {
	Process(ctx context.Context, consumer, messageID string, fn func(ctx context.Context) error) (bool, error)
}
