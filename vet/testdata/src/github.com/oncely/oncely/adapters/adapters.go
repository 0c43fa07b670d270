// Package adapters is a stub of oncely's adapters package.
package adapters

import (
	"context"

	"github.com/oncely/oncely/consumer"
)

type Broker interface {
	Source(ctx context.Context, source, consumer string) (consumer.Source, error)
}

func Open(ctx context.Context, url string) (Broker, error) { return nil, nil }
