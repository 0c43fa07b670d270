package postgres_test

import (
	"context"
	"net"

	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/internal/pgtest"
	pgstore "github.com/oncely/oncely/store/postgres"
)

// TestCheckAtStartUp: a schema that was never migrated fails Check with the
// fix in the message; a migrated one passes; an unreachable database fails
// within the caller's deadline. Catches: a missing migration that only shows
// as an endless outage once messages arrive.
func TestCheckAtStartUp(t *testing.T) {
	bare := pgtest.New(t, pgtest.Options{NoMigrate: true})
	s := newStore(t, bare, pgstore.Config{})
	err := s.Check(ctxT(t))
	require.ErrorIs(t, err, pgstore.ErrNotMigrated)
	require.ErrorContains(t, err, "run `oncely migrate --schema "+bare.Schema+"`")
	require.ErrorContains(t, err, "version 0, this build needs")
	// Probe, which the runtime calls during an outage, names the fix too.
	require.ErrorIs(t, s.Probe(ctxT(t)), pgstore.ErrNotMigrated)

	migrated := pgtest.New(t)
	require.NoError(t, newStore(t, migrated, pgstore.Config{}).Check(ctxT(t)))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close()) // nothing listens there any more
	pool := migrated.NewPool(t, func(c *pgxpool.Config) {
		c.ConnConfig.Host, c.ConnConfig.Port = "127.0.0.1", uint16(port)
		c.ConnConfig.ConnectTimeout = time.Second
	})
	down, err := pgstore.New(pool, pgstore.Config{Schema: migrated.Schema, NoPruning: true})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.ErrorContains(t, down.Check(ctx), "is the database reachable")

}
