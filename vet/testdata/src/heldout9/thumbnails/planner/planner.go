// Package planner plans the thumbnails of an upload; the renderer, another
// service, produces them from the outbox's requests.
package planner

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	_ "image/png" // PNG headers

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"

	"heldout9/thumbnails/originals"
)

// Planner plans renditions.
type Planner struct {
	originals *originals.Reader
	sizes     []int
}

type uploaded struct {
	Key string `json:"key"`
}

type renderRequest struct {
	Key   string `json:"key"`
	Width int    `json:"width"`
}

func (p *Planner) uploaded(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var u uploaded
	if err := json.Unmarshal(msg.Body, &u); err != nil {
		return consumer.Permanent(err)
	}
	head, err := p.originals.Head(ctx, u.Key, 64<<10)
	if err != nil {
		return err
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(head))
	if err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO originals (key, width, height) VALUES ($1, $2, $3)`, u.Key, cfg.Width, cfg.Height); err != nil {
		return err
	}
	var sends []outbox.Outgoing
	for _, w := range p.sizes {
		if w >= cfg.Width {
			continue
		}
		b, _ := json.Marshal(renderRequest{Key: u.Key, Width: w})
		sends = append(sends, outbox.Outgoing{Destination: "thumbnails.render", Message: &consumer.Message{Key: u.Key, Body: b}})
	}
	return outbox.SendBatch(ctx, tx, sends)
}

func (p *Planner) removed(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	_, err := tx.Exec(ctx, `DELETE FROM originals WHERE key = $1`, msg.Key)
	return err
}

// Start wires the planner's consumers.
func Start(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, r *originals.Reader) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	p := &Planner{originals: r, sizes: []int{128, 512, 1024}}
	idem := middleware.Idempotency(st)
	for topic, h := range map[string]consumer.Handler{
		"uploads.created": postgres.HandlerFunc(p.uploaded),
		"uploads.removed": postgres.HandlerFunc(p.removed),
	} {
		src, err := broker.Source(ctx, topic, "thumbnails-planner")
		if err != nil {
			return err
		}
		c, err := consumer.New(src, h, consumer.Config{Name: "thumbnails-" + topic}, idem)
		if err != nil {
			return err
		}
		go c.Run(ctx)
	}
	return nil
}
