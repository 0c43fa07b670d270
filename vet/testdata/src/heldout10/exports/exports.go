// Package exports writes a CSV line per closed statement for the finance
// team's nightly pickup, from NATS JetStream.
package exports

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Config wires the service.
type Config struct {
	NATS      string
	Pool      *pgxpool.Pool
	ExportDir string // a volume the finance SFTP job reads
}

// Run consumes statement events until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	if err := os.MkdirAll(cfg.ExportDir, 0o750); err != nil {
		return err
	}
	st, err := postgres.New(cfg.Pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, cfg.NATS)
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "statements.closed", "finance-export")
	if err != nil {
		return err
	}

	h := postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var s struct {
			Account string    `json:"account"`
			Period  string    `json:"period"`
			Total   int64     `json:"total"`
			Closed  time.Time `json:"closed"`
		}
		if err := json.Unmarshal(msg.Body, &s); err != nil {
			return consumer.Permanent(err)
		}
		if _, err := tx.Exec(ctx, `UPDATE statements SET exported_at = now() WHERE account_id = $1 AND period = $2`, s.Account, s.Period); err != nil {
			return err
		}
		line := fmt.Sprintf("%s,%s,%d,%s\n", s.Account, s.Period, s.Total, s.Closed.Format(time.RFC3339))
		name := filepath.Join(cfg.ExportDir, s.Period+"-"+s.Account+".csv")
		return os.WriteFile(name, []byte(line), 0o640) // want "."
	})

	c, err := consumer.New(src, h, consumer.Config{Name: "finance-export"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
