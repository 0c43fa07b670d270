// Package harbor assigns berths to arriving vessels.
package harbor

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"

	"heldout8/harbor/berths"
	"heldout8/harbor/store/cached"
	"heldout8/harbor/store/pgberths"
)

type arrivalAnnounced struct {
	IMO     string    `json:"imo"`
	BerthID string    `json:"berth_id"`
	ETA     time.Time `json:"eta"`
	Hours   int       `json:"hours"`
}

// Harbour is the berth-assignment service.
type Harbour struct {
	pool  *pgxpool.Pool // reads of reference data and the cache's warm-up
	cache *cached.Cache
	repos func(db pgberths.DBTX) berths.Repository
}

// NewHarbour returns the service; every unit of work gets its own repository.
func NewHarbour(pool *pgxpool.Pool) *Harbour {
	h := &Harbour{pool: pool, cache: &cached.Cache{}}
	h.repos = func(db pgberths.DBTX) berths.Repository { return cached.Wrap(pgberths.New(db), h.cache) }
	return h
}

// Warm fills the berth cache before the consumer starts.
func (h *Harbour) Warm(ctx context.Context, ids []string) error {
	return h.cache.Warm(ctx, pgberths.New(h.pool), ids)
}

func (h *Harbour) draftOf(ctx context.Context, imo string) (float64, error) {
	var draft float64
	err := h.pool.QueryRow(ctx, `SELECT draft FROM vessels WHERE imo = $1`, imo).Scan(&draft)
	return draft, err
}

// Assign is the handler.
func (h *Harbour) Assign(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var a arrivalAnnounced
	if err := json.Unmarshal(msg.Body, &a); err != nil {
		return consumer.Permanent(err)
	}
	draft, err := h.draftOf(ctx, a.IMO)
	if err != nil {
		return err
	}
	repo := h.repos(tx)
	b, err := repo.Find(ctx, a.BerthID)
	if err != nil {
		return err
	}
	if draft > b.MaxDraft {
		return consumer.Permanent(fmt.Errorf("vessel %s draft %.1f m exceeds berth %s", a.IMO, draft, b.ID))
	}
	if !b.Free(a.ETA) {
		return consumer.Permanent(berths.ErrOccupied)
	}
	return repo.Assign(ctx, b.ID, a.IMO, a.ETA.Add(time.Duration(a.Hours)*time.Hour))
}
