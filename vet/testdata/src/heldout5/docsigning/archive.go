// Package docsigning records signed legal documents and archives them.
package docsigning

import (
	"bytes"
	"context"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Archive stores signed PDFs.
type Archive struct {
	S3     *s3.Client
	Bucket string
}

// Put uploads one signed document.
func (a *Archive) Put(ctx context.Context, key string, pdf []byte) error {
	_, err := a.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: &a.Bucket, Key: &key, Body: bytes.NewReader(pdf)})
	return err
}
