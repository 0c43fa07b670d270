package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"
)

// rowIDs returns the outbox's message IDs, sorted.
func rowIDs(t *testing.T, db *pgtest.DB) []string {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), fmt.Sprintf("SELECT message_id FROM %s", pgx.Identifier{db.Schema, outbox.Table}.Sanitize()))
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	sort.Strings(ids)
	return ids
}

func sorted(ids ...string) []string { sort.Strings(ids); return ids }

// sendTwo is a handler sending two messages without IDs.
func sendTwo(s *outbox.Sender) func(ctx context.Context, tx pgx.Tx, in *consumer.Message) error {
	return func(ctx context.Context, tx pgx.Tx, in *consumer.Message) error {
		for i := range 2 {
			if err := s.Send(ctx, tx, "out", &consumer.Message{Key: in.ID, Body: []byte{byte(i)}}); err != nil {
				return err
			}
		}
		return nil
	}
}

// TestDerivedIDsSurviveRetry: a run that fails rolls its rows back, and the
// retried run derives the same IDs (single-message mode).
func TestDerivedIDsSurviveRetry(t *testing.T) {
	db := pgtest.New(t)
	s := sender(t, db)
	st, err := postgres.New(db.Pool, postgres.Config{Schema: db.Schema, NoPruning: true})
	require.NoError(t, err)
	ctx := consumer.WithName(context.Background(), "ledger")
	defer st.Close(ctx)

	in := &consumer.Message{ID: "in-1"}
	h := outbox.Caused(postgres.HandlerFunc(sendTwo(s)))
	boom := errors.New("boom")
	_, err = st.Process(ctx, "ledger", in.ID, func(ctx context.Context) error {
		if err := h.Handle(ctx, in); err != nil {
			return err
		}
		return boom
	})
	require.ErrorIs(t, err, boom)
	require.Empty(t, rowIDs(t, db))

	_, err = st.Process(ctx, "ledger", in.ID, func(ctx context.Context) error { return h.Handle(ctx, in) })
	require.NoError(t, err)
	want := sorted(outbox.DeriveID("ledger", "in-1", 0), outbox.DeriveID("ledger", "in-1", 1))
	require.Equal(t, want, rowIDs(t, db))
	require.NotEqual(t, outbox.DeriveID("ledger", "in-1", 0), outbox.DeriveID("billing", "in-1", 0))
	require.NotEqual(t, want[0], want[1])

	// Without a cause, a message without an ID is refused.
	require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		require.ErrorIs(t, s.Send(context.Background(), tx, "out", &consumer.Message{}), outbox.ErrNoID)
		require.ErrorIs(t, s.Send(ctx, tx, "", msg("x", "", "")), outbox.ErrNoDestination)
		return nil
	}))
}

// TestDerivedIDsInSavepointBatch: in savepoint batch mode several incoming
// messages share a transaction; each numbers its own sends, and one that
// fails rolls back only its rows.
func TestDerivedIDsInSavepointBatch(t *testing.T) {
	db := pgtest.New(t)
	s := sender(t, db)
	st, err := postgres.New(db.Pool, postgres.Config{Schema: db.Schema, NoPruning: true, BatchSize: 3})
	require.NoError(t, err)
	ctx := consumer.WithName(context.Background(), "ledger")
	defer st.Close(ctx)

	h := outbox.Caused(postgres.HandlerFunc(sendTwo(s)))
	boom := errors.New("boom")
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i, id := range []string{"a", "b", "c"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = st.Process(ctx, "ledger", id, func(ctx context.Context) error {
				err := h.Handle(ctx, &consumer.Message{ID: id})
				if err == nil && id == "b" {
					return boom
				}
				return err
			})
		}()
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], boom)
	require.NoError(t, errs[2])
	require.Equal(t, sorted(
		outbox.DeriveID("ledger", "a", 0), outbox.DeriveID("ledger", "a", 1),
		outbox.DeriveID("ledger", "c", 0), outbox.DeriveID("ledger", "c", 1),
	), rowIDs(t, db))
}

// TestDerivedIDsInBatchHandler: a postgres.BatchHandlerFunc names each
// incoming message as the cause with WithCause.
func TestDerivedIDsInBatchHandler(t *testing.T) {
	db := pgtest.New(t)
	s := sender(t, db)
	st, err := postgres.New(db.Pool, postgres.Config{Schema: db.Schema, NoPruning: true})
	require.NoError(t, err)
	ctx := consumer.WithName(context.Background(), "ledger")
	defer st.Close(ctx)

	msgs := []*consumer.Message{{ID: "x"}, {ID: "y"}}
	bh := postgres.BatchHandlerFunc(func(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
		for _, in := range msgs {
			if err := sendTwo(s)(outbox.WithCause(ctx, in), tx, in); err != nil {
				return err
			}
		}
		return nil
	})
	_, err = st.ProcessBatch(ctx, "ledger", []string{"x", "y"}, func(ctx context.Context, fresh []int) error {
		var in []*consumer.Message
		for _, i := range fresh {
			in = append(in, msgs[i])
		}
		return bh.HandleBatch(ctx, in)
	})
	require.NoError(t, err)
	require.Equal(t, sorted(
		outbox.DeriveID("ledger", "x", 0), outbox.DeriveID("ledger", "x", 1),
		outbox.DeriveID("ledger", "y", 0), outbox.DeriveID("ledger", "y", 1),
	), rowIDs(t, db))
}
