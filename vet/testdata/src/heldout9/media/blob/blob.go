// Package blob stores media objects.
package blob

import (
	"bytes"
	"context"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3 stores objects in one bucket.
type S3 struct {
	client *s3.Client
	bucket string
}

// NewS3 returns a store over bucket.
func NewS3(client *s3.Client, bucket string) *S3 { return &S3{client: client, bucket: bucket} }

// Put writes data under key.
func (s *S3) Put(ctx context.Context, key string, data []byte) error {
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.bucket, Key: &key, Body: bytes.NewReader(data)})
	return err
}
