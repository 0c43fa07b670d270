// Package okcompute is a corpus handler package (see vet/corpus_test.go).
package okcompute

import (
	"context"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
	"sync"
)

func checksum(b []byte) int {
	n := 0
	for _, c := range b {
		n += int(c)
	}
	return n
}

// Handle fans pure computation out and joins it before writing.
func Handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	parts := [][]byte{[]byte(m.ID), []byte("x")}
	sums := make([]int, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sums[i] = checksum(p)
		}()
	}
	wg.Wait()
	_, err := tx.Exec(ctx, "INSERT INTO sums (id, a, b) VALUES ($1, $2, $3)", m.ID, sums[0], sums[1])
	return err
}

var _ = postgres.HandlerFunc(Handle)
