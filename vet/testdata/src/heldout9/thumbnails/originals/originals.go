// Package originals reads uploaded originals from S3.
package originals

import (
	"context"
	"io"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Reader reads originals.
type Reader struct {
	Client *s3.Client
	Bucket string
}

// Head returns the first n bytes of the object at key.
func (r *Reader) Head(ctx context.Context, key string, n int64) ([]byte, error) {
	out, err := r.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: &r.Bucket, Key: &key})
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	return io.ReadAll(io.LimitReader(out.Body, n))
}
