package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/outbox"
)

func TestRelayCommand(t *testing.T) {
	db := pgtest.New(t)
	mem := memory.NewBroker()
	s, err := outbox.NewSender(db.Schema)
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		for _, id := range []string{"a", "b", "c"} {
			if err := s.Send(ctx, tx, "orders", &consumer.Message{ID: id, Key: "k", Body: []byte(id)}); err != nil {
				return err
			}
		}
		return nil
	}))

	var out, errb bytes.Buffer
	a := newApp(&out, &errb, func(string) string { return "" })
	a.openOpts = []adapters.Option{adapters.WithMemoryBroker(mem)}
	a.memoryShared = true
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	code := make(chan int, 1)
	go func() {
		code <- a.run(rctx, []string{"relay", "--broker", "mem://", "--database", db.URL, "--schema", db.Schema, "--no-listen", "--poll", "10ms"})
	}()
	for i := 0; i < 3000 && mem.Depth("orders") < 3; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	require.Equal(t, 3, mem.Depth("orders"))
	cancel()
	require.Equal(t, 0, <-code, errb.String())
	require.Contains(t, out.String(), "relaying schema "+db.Schema)
}

func TestRelayCommandUsage(t *testing.T) {
	code, out, _ := cli(t, nil, nil, "relay", "--help")
	require.Equal(t, 0, code)
	require.Contains(t, out, "Usage: oncely relay")
	code, _, errs := cli(t, nil, nil, "relay", "--database-url", "postgres://127.0.0.1/x")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "--broker")
}
