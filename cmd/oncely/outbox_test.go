package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/outbox"
)

func TestOutboxDeadAndRedrive(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	dead := pgx.Identifier{db.Schema, outbox.DeadTable}.Sanitize()
	_, err := db.Pool.Exec(ctx, `INSERT INTO `+dead+` (seq, message_id, destination, msg_key, body, headers, created_at, attempts, reason) VALUES
		(7, 'too-big', 'receipts', 'acc-1', 'x', '{}', now(), 10, 'nats: maximum payload exceeded'),
		(9, 'other', 'invoices', '', 'y', '{}', now(), 10, 'refused')`)
	require.NoError(t, err)
	base := []string{"--database-url", db.URL, "--schema", db.Schema}

	code, out, errs := cli(t, nil, nil, append([]string{"outbox", "dead"}, base...)...)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "outbox dead rows of schema "+db.Schema+": 2")
	require.Regexp(t, `7\s+too-big\s+receipts\s+acc-1\s+10\s+\S+\s+nats: maximum payload exceeded`, out)

	code, out, errs = cli(t, nil, nil, append([]string{"outbox", "dead", "--destination", "invoices", "--output", "json"}, base...)...)
	require.Equal(t, 0, code, errs)
	var doc outboxDeadJSON
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Len(t, doc.Rows, 1)
	require.Equal(t, "other", doc.Rows[0].ID)

	code, _, errs = cli(t, nil, nil, append([]string{"outbox", "redrive"}, base...)...)
	require.Equal(t, 2, code)
	require.Contains(t, errs, "--destination, --seq or --all")

	code, out, errs = cli(t, nil, nil, append([]string{"outbox", "redrive", "--seq", "7"}, base...)...)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "redriven 1 outbox dead rows")
	var dest, key string
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT destination, msg_key FROM "+pgx.Identifier{db.Schema, outbox.Table}.Sanitize()+
		" WHERE message_id = 'too-big' AND published_at IS NULL").Scan(&dest, &key))
	require.Equal(t, []string{"receipts", "acc-1"}, []string{dest, key})
	var left int
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*) FROM "+dead).Scan(&left))
	require.Equal(t, 1, left)
}
