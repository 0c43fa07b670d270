// Package lighthouse records pings from navigation beacons, raises faults,
// and serves the coastguard's fault desk.
package lighthouse

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout7/internal/beacondb"
)

// Keeper owns the beacon tables.
type Keeper struct {
	q   *beacondb.Queries
	log *slog.Logger
}

// NewKeeper returns a keeper whose queries run on pool unless rebound.
func NewKeeper(pool *pgxpool.Pool, log *slog.Logger) *Keeper {
	return &Keeper{q: beacondb.New(pool), log: log}
}

// ClearFault is the fault desk's endpoint: POST /faults/{id}/clear.
func (k *Keeper) ClearFault(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		http.Error(w, "bad fault id", http.StatusBadRequest)
		return
	}
	if err := k.q.ClearFault(r.Context(), id, r.Header.Get("X-Officer")); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// Run serves nothing itself: it consumes beacon pings until ctx ends.
func (k *Keeper) Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	n, err := k.q.CountBeacons(ctx)
	if err != nil {
		return fmt.Errorf("lighthouse: count beacons: %w", err)
	}
	k.log.Info("watching beacons", "active", n)
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "beacons.pings", "lighthouse")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(k.ping), consumer.Config{Name: "lighthouse"},
		middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
