// Package bugnodedupevar is a corpus handler package with a bug (see vet/corpus_test.go).
package bugnodedupevar

import (
	"context"
	"corpus/internal/platform"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
)

type handler struct{}

func (handler) Handle(ctx context.Context, m *consumer.Message) error { return nil }

func Wire(src consumer.Source) (*consumer.Consumer, error) {
	mws := []consumer.Middleware{middleware.Logging()}
	mws = append(mws, middleware.Logging())
	cfg := consumer.Config{Name: "notifications"}
	return consumer.New(src, handler{}, cfg, mws...) // want `without an idempotency middleware`
}

var _ = platform.Metrics
