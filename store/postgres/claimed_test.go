package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/internal/pgtest"
	pgstore "github.com/oncely/oncely/store/postgres"
)

// Claimed names exactly the IDs whose handler committed for that consumer:
// not a rolled-back one, not another consumer's, not an unknown one; and it
// reads past its 10,000-ID chunk.
func TestClaimed(t *testing.T) {
	db := pgtest.New(t)
	createEffects(t, db)
	s := newStore(t, db, pgstore.Config{NoPruning: true})
	ctx := ctxT(t)
	for _, id := range []string{"a", "b"} {
		_, err := s.Process(ctx, "ledger", id, effect(id))
		require.NoError(t, err)
	}
	_, err := s.Process(ctx, "ledger", "rolled-back", func(context.Context) error { return errors.New("no") })
	require.Error(t, err)
	_, err = s.Process(ctx, "audit", "c", effect("c"))
	require.NoError(t, err)

	ids := []string{"a", "rolled-back", "c", "unknown"}
	for i := range 10_001 {
		ids = append(ids, fmt.Sprint("filler-", i))
	}
	ids = append(ids, "b")
	got, err := s.Claimed(ctx, "ledger", ids)
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"a": true, "b": true}, got)
}
