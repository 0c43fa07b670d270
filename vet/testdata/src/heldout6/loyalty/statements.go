// Package loyalty accrues points and archives monthly statements.
package loyalty

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store"
	"github.com/oncely/oncely/store/postgres"
)

type accrual struct {
	Member string `json:"member"`
	Points int    `json:"points"`
	Month  string `json:"month"`
}

// Accruer books point accruals in batches.
type Accruer struct {
	S3     *s3.Client
	Bucket string
}

func (a *Accruer) handleBatch(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	var buf bytes.Buffer
	for _, m := range msgs {
		var ac accrual
		if err := json.Unmarshal(m.Body, &ac); err != nil {
			return consumer.Permanent(err)
		}
		if _, err := tx.Exec(ctx, `UPDATE members SET points = points + $2 WHERE id = $1`, ac.Member, ac.Points); err != nil {
			return err
		}
		fmt.Fprintf(&buf, "%s,%s,%d\n", ac.Month, ac.Member, ac.Points)
	}
	key := fmt.Sprintf("accruals/%s.csv", msgs[0].ID)
	_, err := a.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: &a.Bucket, Key: &key, Body: &buf}) // want "S3 write inside transactional handler"
	return err
}

// Run starts the accrual consumer.
func Run(ctx context.Context, src consumer.Source, a *Accruer, st store.Store) error {
	c, err := consumer.New(src, postgres.BatchHandlerFunc(a.handleBatch), consumer.Config{Name: "loyalty-accrual"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
