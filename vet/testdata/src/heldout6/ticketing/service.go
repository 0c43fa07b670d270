package ticketing

import (
	"context"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"github.com/segmentio/kafka-go"
)

// Service holds the ticketing consumer's dependencies.
type Service struct {
	Source consumer.Source
	Writer *kafka.Writer
	Store  *postgres.Store
}

// Run starts the issuer.
func (s Service) Run(ctx context.Context) error {
	is := &Issuer{Issued: s.Writer}
	c, err := consumer.New(s.Source, postgres.HandlerFunc(is.issue), consumer.Config{Name: "ticket-issuer"}, middleware.Idempotency(s.Store))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
