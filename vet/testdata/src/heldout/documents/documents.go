// Package documents registers uploaded document bundles: it fingerprints
// every page and stores the bundle's manifest.
package documents

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"golang.org/x/sync/errgroup"
)

type bundleUploaded struct {
	BundleID string   `json:"bundle_id"`
	Owner    string   `json:"owner"`
	Pages    [][]byte `json:"pages"`
}

// fingerprints hashes the pages in parallel; it does not touch the database.
func fingerprints(ctx context.Context, pages [][]byte) ([]string, error) {
	out := make([]string, len(pages))
	g, gctx := errgroup.WithContext(ctx)
	for i, p := range pages {
		i, p := i, p
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			sum := sha256.Sum256(p)
			out[i] = hex.EncodeToString(sum[:])
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

func register(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var b bundleUploaded
	if err := json.Unmarshal(msg.Body, &b); err != nil {
		return consumer.Permanent(err)
	}
	sums, err := fingerprints(ctx, b.Pages)
	if err != nil {
		return err
	}
	manifest, err := json.Marshal(sums)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO bundles (id, owner, manifest) VALUES ($1, $2, $3)`, b.BundleID, b.Owner, manifest)
	return err
}

// Run consumes documents.uploaded.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "documents.uploaded", "documents")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(register), consumer.Config{Name: "documents"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
