// Package s3 is a stub of github.com/aws/aws-sdk-go-v2/service/s3.
package s3

import (
	"context"
	"io"
)

type Client struct{}
type Options struct{}

type PutObjectInput struct {
	Bucket *string
	Key    *string
	Body   io.Reader
}
type PutObjectOutput struct{}
type GetObjectInput struct {
	Bucket *string
	Key    *string
}
type GetObjectOutput struct{ Body io.ReadCloser }

func (c *Client) PutObject(ctx context.Context, in *PutObjectInput, opts ...func(*Options)) (*PutObjectOutput, error) {
	return nil, nil
}
func (c *Client) GetObject(ctx context.Context, in *GetObjectInput, opts ...func(*Options)) (*GetObjectOutput, error) {
	return nil, nil
}
