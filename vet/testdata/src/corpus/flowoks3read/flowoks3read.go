// Package flowoks3read is a correct corpus package: a price list read from
// S3 in the handler, the order written through the claim's transaction.
package flowoks3read

import (
	"context"
	"io"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type pricing struct {
	s3     *s3.Client
	bucket string
}

func (p *pricing) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	key := "prices/current.csv"
	obj, err := p.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: &p.bucket, Key: &key})
	if err != nil {
		return err
	}
	defer obj.Body.Close()
	list, err := io.ReadAll(obj.Body)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, "INSERT INTO priced_orders (id, price_list_bytes) VALUES ($1, $2)", m.ID, len(list))
	return err
}

// New builds the handler.
func New(c *s3.Client, bucket string) consumer.Handler {
	return postgres.HandlerFunc((&pricing{s3: c, bucket: bucket}).handle)
}
