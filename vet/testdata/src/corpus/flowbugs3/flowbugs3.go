// Package flowbugs3 is a corpus package: a receipt uploaded to S3 in the
// claim's transaction.
package flowbugs3

import (
	"context"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type receipts struct {
	s3     *s3.Client
	bucket string
}

func (r *receipts) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	key := "receipts/" + m.ID + ".txt"
	if _, err := tx.Exec(ctx, "INSERT INTO receipts (order_id, object_key) VALUES ($1, $2)", m.ID, key); err != nil {
		return err
	}
	_, err := r.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: &r.bucket, Key: &key, Body: strings.NewReader(m.ID)}) // want `effect outside the database`
	return err
}

// New builds the handler.
func New(c *s3.Client, bucket string) consumer.Handler {
	return postgres.HandlerFunc((&receipts{s3: c, bucket: bucket}).handle)
}
