package marina

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type arrival struct {
	Vessel  string `json:"vessel"`
	Berth   string `json:"berth"`
	DraftCm int    `json:"draft_cm"`
}

// Harbourmaster embeds its repositories.
type Harbourmaster struct {
	BerthRepo
	TideReader
}

func (h *Harbourmaster) arrive(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var a arrival
	if err := json.Unmarshal(msg.Body, &a); err != nil {
		return consumer.Permanent(err)
	}
	depth, err := h.MinDepthCm(ctx, a.Berth)
	if err != nil {
		return err
	}
	if depth < a.DraftCm {
		return consumer.Permanent(fmt.Errorf("marina: berth %s too shallow for %s", a.Berth, a.Vessel))
	}
	return h.Allocate(ctx, tx, a.Berth, a.Vessel)
}

// Run starts the arrivals consumer.
func Run(ctx context.Context, src consumer.Source, pool *pgxpool.Pool) error {
	h := &Harbourmaster{TideReader: TideReader{Pool: pool}}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(h.arrive), consumer.Config{Name: "marina-arrivals"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
