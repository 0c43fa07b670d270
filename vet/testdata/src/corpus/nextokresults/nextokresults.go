// Package nextokresults is a held-out corpus package (third round): an
// errgroup with the handler's context that scores lines concurrently and
// sends results back on a channel the handler drains before writing.
package nextokresults

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
	"golang.org/x/sync/errgroup"
)

type scored struct {
	line  string
	score int
}

func Handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	lines := strings.Split(m.ID, ",")
	out := make(chan scored, len(lines))
	g, gctx := errgroup.WithContext(ctx)
	for _, l := range lines {
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			out <- scored{line: l, score: len(l)}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	close(out)
	for s := range out {
		if _, err := tx.Exec(ctx, "INSERT INTO scores (line, score) VALUES ($1, $2)", s.line, s.score); err != nil {
			return err
		}
	}
	return nil
}

var _ = postgres.HandlerFunc(Handle)
