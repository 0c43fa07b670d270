// Package redis is a stub of github.com/redis/go-redis/v9.
package redis

import (
	"context"
	"time"
)

type StatusCmd struct{}
type StringCmd struct{}
type IntCmd struct{}
type BoolCmd struct{}

func (c *StringCmd) Result() (string, error) { return "", nil }
func (c *StringCmd) Err() error              { return nil }
func (c *StatusCmd) Err() error              { return nil }
func (c *IntCmd) Err() error                 { return nil }

type XAddArgs struct {
	Stream string
	Values any
}

type Cmdable interface {
	Get(ctx context.Context, key string) *StringCmd
	Set(ctx context.Context, key string, value any, expiration time.Duration) *StatusCmd
	Incr(ctx context.Context, key string) *IntCmd
	XAdd(ctx context.Context, a *XAddArgs) *StringCmd
}

type Client struct{}

func NewClient(opt *Options) *Client { return &Client{} }

type Options struct{ Addr string }

func (c *Client) Get(ctx context.Context, key string) *StringCmd { return nil }
func (c *Client) Set(ctx context.Context, key string, value any, expiration time.Duration) *StatusCmd {
	return nil
}
func (c *Client) SetNX(ctx context.Context, key string, value any, expiration time.Duration) *BoolCmd {
	return nil
}
func (c *Client) Incr(ctx context.Context, key string) *IntCmd                     { return nil }
func (c *Client) Del(ctx context.Context, keys ...string) *IntCmd                  { return nil }
func (c *Client) HSet(ctx context.Context, key string, values ...any) *IntCmd      { return nil }
func (c *Client) HGet(ctx context.Context, key, field string) *StringCmd           { return nil }
func (c *Client) XAdd(ctx context.Context, a *XAddArgs) *StringCmd                 { return nil }
func (c *Client) Publish(ctx context.Context, channel string, message any) *IntCmd { return nil }
func (c *Client) Exists(ctx context.Context, keys ...string) *IntCmd               { return nil }

func (c *BoolCmd) Result() (bool, error) { return false, nil }
