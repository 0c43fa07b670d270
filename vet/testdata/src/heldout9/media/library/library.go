// Package library catalogues transcoded media.
package library

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout9/media/blob"
)

// Objects stores blobs.
type Objects interface {
	Put(ctx context.Context, key string, data []byte) error
}

// Library catalogues media.
type Library struct {
	objects Objects
}

type transcoded struct {
	Asset      string   `json:"asset"`
	Renditions []string `json:"renditions"`
}

type manifest struct {
	Asset      string   `json:"asset"`
	Renditions []string `json:"renditions"`
}

func (l *Library) transcoded(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var t transcoded
	if err := json.Unmarshal(msg.Body, &t); err != nil {
		return consumer.Permanent(err)
	}
	for _, r := range t.Renditions {
		if _, err := tx.Exec(ctx, `INSERT INTO renditions (asset, name) VALUES ($1, $2) ON CONFLICT DO NOTHING`, t.Asset, r); err != nil {
			return err
		}
	}
	m, _ := json.Marshal(manifest(t))
	if err := l.objects.Put(ctx, "manifests/"+t.Asset+".json", m); err != nil { // want "."
		return err
	}
	_, err := tx.Exec(ctx, `UPDATE assets SET status = 'ready' WHERE id = $1`, t.Asset)
	return err
}

func (l *Library) deleted(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	_, err := tx.Exec(ctx, `UPDATE assets SET status = 'deleted' WHERE id = $1`, msg.Key)
	return err
}

// Start wires the library consumers.
func Start(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, s3c *s3.Client) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	l := &Library{objects: blob.NewS3(s3c, "media-manifests")}
	handlers := []struct {
		topic, name string
		fn          func(context.Context, pgx.Tx, *consumer.Message) error
	}{
		{"media.transcoded", "library-transcoded", l.transcoded},
		{"media.deleted", "library-deleted", l.deleted},
	}
	for _, h := range handlers {
		src, err := broker.Source(ctx, h.topic, h.name)
		if err != nil {
			return err
		}
		c, err := consumer.New(src, postgres.HandlerFunc(h.fn), consumer.Config{Name: h.name}, middleware.Idempotency(st))
		if err != nil {
			return err
		}
		go c.Run(ctx)
	}
	return nil
}
