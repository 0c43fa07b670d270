// Package grpc is a stub of google.golang.org/grpc.
package grpc

import "context"

type CallOption interface{}
type ClientConn struct{}

type ClientConnInterface interface {
	Invoke(ctx context.Context, method string, args any, reply any, opts ...CallOption) error
}

func (cc *ClientConn) Invoke(ctx context.Context, method string, args any, reply any, opts ...CallOption) error {
	return nil
}
