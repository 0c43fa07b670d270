// Package kgo is a stub of github.com/twmb/franz-go/pkg/kgo.
package kgo

import (
	"context"
	"time"
)

type Opt interface{ apply() }
type opt struct{}

func (opt) apply() {}

type Client struct{}

func NewClient(opts ...Opt) (*Client, error) { return &Client{}, nil }
func SeedBrokers(b ...string) Opt            { return opt{} }
func ConsumerGroup(g string) Opt             { return opt{} }
func ConsumeTopics(t ...string) Opt          { return opt{} }
func DisableAutoCommit() Opt                 { return opt{} }
func AutoCommitInterval(d time.Duration) Opt { return opt{} }
func AutoCommitMarks() Opt                   { return opt{} }

type Record struct {
	Topic string
	Value []byte
}

type ProduceResults []struct{ Err error }

func (c *Client) ProduceSync(ctx context.Context, rs ...*Record) ProduceResults { return nil }
