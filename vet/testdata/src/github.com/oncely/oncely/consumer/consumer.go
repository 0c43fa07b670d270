// Package consumer is a stub of oncely's consumer package for the analyzers' tests.
package consumer

import (
	"context"
	"time"
)

type Message struct {
	ID      string
	Key     string
	Body    []byte
	Headers map[string]string
	Source  string
	Attempt int
}

type Handler interface {
	Handle(ctx context.Context, msg *Message) error
}

type HandlerFunc func(ctx context.Context, msg *Message) error

func (f HandlerFunc) Handle(ctx context.Context, msg *Message) error { return f(ctx, msg) }

type Middleware func(Handler) Handler

type Duplicates struct{ reason string }

func AllowDuplicates(reason string) Duplicates { return Duplicates{reason} }

type Config struct {
	Name        string
	Concurrency int
	Duplicates  Duplicates
}

type Source interface {
	Receive(ctx context.Context, max int) ([]Delivery, error)
}

type Delivery interface {
	Message() *Message
	Ack(ctx context.Context) error
	Retry(ctx context.Context, after time.Duration, headers map[string]string) error
	DeadLetter(ctx context.Context, headers map[string]string) error
}

type Consumer struct{}

func New(src Source, h Handler, cfg Config, mws ...Middleware) (*Consumer, error) { return nil, nil }

func Deduplicating(h Handler) Handler { return h }

func Chain(h Handler, mws ...Middleware) Handler { return h }

func MarkClaimed(ctx context.Context) {}

func MarkDuplicate(ctx context.Context) {}

func Permanent(err error) error { return err }

func (c *Consumer) Run(ctx context.Context) error { return nil }
