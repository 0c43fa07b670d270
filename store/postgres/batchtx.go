package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// batchTx is the transaction a handler gets in batch mode. Before the
// handler's first statement it releases the previous message's savepoint and
// opens this message's; for an Exec with arguments (the common first
// statement: an UPDATE or INSERT) those go in the same round trip, otherwise
// in one of their own. A handler that runs no statement opens no savepoint.
// Like any pgx.Tx it is not safe for concurrent use.
type batchTx struct {
	handlerTx
	pending []string // savepoint statements not sent yet
	flushed bool     // this message's savepoint was sent
	err     error    // sending the savepoint statements failed
}

// start prepares the savepoint of the next message.
func (t *batchTx) start(open bool) {
	t.pending = t.pending[:0]
	if open {
		t.pending = append(t.pending, releaseSQL)
	}
	t.pending = append(t.pending, savepointSQL)
	t.flushed, t.err = false, nil
}

// flush sends the pending savepoint statements on their own.
func (t *batchTx) flush(ctx context.Context) error {
	if len(t.pending) == 0 {
		return t.err
	}
	var b pgx.Batch
	for _, q := range t.pending {
		b.Queue(q)
	}
	t.pending, t.flushed = t.pending[:0], true
	if err := t.handlerTx.Tx.SendBatch(ctx, &b).Close(); err != nil {
		t.err = err
	}
	return t.err
}

// piggybackable reports whether an Exec with args can join a pgx.Batch:
// pgx.Batch runs the extended protocol with the connection's default mode, so
// Execs without arguments (simple protocol, maybe several statements) and
// Execs with a per-query mode option are sent on their own.
func piggybackable(args []any) bool {
	if len(args) == 0 {
		return false
	}
	switch args[0].(type) {
	case pgx.QueryExecMode, pgx.QueryResultFormats, pgx.QueryResultFormatsByOID:
		return false
	}
	return true
}

// Exec runs sql after the pending savepoint statements, in the same round
// trip when it can.
func (t *batchTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if len(t.pending) == 0 || !piggybackable(args) {
		if err := t.flush(ctx); err != nil {
			return pgconn.CommandTag{}, err
		}
		return t.handlerTx.Tx.Exec(ctx, sql, args...)
	}
	var b pgx.Batch
	for _, q := range t.pending {
		b.Queue(q)
	}
	n := len(t.pending)
	b.Queue(sql, args...)
	t.pending, t.flushed = t.pending[:0], true
	br := t.handlerTx.Tx.SendBatch(ctx, &b)
	for range n {
		if _, err := br.Exec(); err != nil {
			t.err = err
			_ = br.Close()
			return pgconn.CommandTag{}, err
		}
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

// Query flushes the savepoint statements, then runs sql.
func (t *batchTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := t.flush(ctx); err != nil {
		return nil, err
	}
	return t.handlerTx.Tx.Query(ctx, sql, args...)
}

// QueryRow flushes the savepoint statements, then runs sql.
func (t *batchTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := t.flush(ctx); err != nil {
		return errRow{err}
	}
	return t.handlerTx.Tx.QueryRow(ctx, sql, args...)
}

// SendBatch flushes the savepoint statements, then sends b.
func (t *batchTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if err := t.flush(ctx); err != nil {
		return pgx.FailedBatchResults(b, err)
	}
	return t.handlerTx.Tx.SendBatch(ctx, b)
}

// CopyFrom flushes the savepoint statements, then copies.
func (t *batchTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if err := t.flush(ctx); err != nil {
		return 0, err
	}
	return t.handlerTx.Tx.CopyFrom(ctx, table, columns, src)
}

// Prepare flushes the savepoint statements, then prepares sql.
func (t *batchTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if err := t.flush(ctx); err != nil {
		return nil, err
	}
	return t.handlerTx.Tx.Prepare(ctx, name, sql)
}

// Begin flushes the savepoint statements, then opens a nested savepoint.
func (t *batchTx) Begin(ctx context.Context) (pgx.Tx, error) {
	if err := t.flush(ctx); err != nil {
		return nil, err
	}
	return t.handlerTx.Tx.Begin(ctx)
}

// LargeObjects flushes the savepoint statements, then returns the large
// object API of the transaction.
func (t *batchTx) LargeObjects() pgx.LargeObjects {
	_ = t.flush(context.Background())
	return t.handlerTx.Tx.LargeObjects()
}

// Conn flushes the savepoint statements, so that statements sent on the
// connection directly also belong to this message, then returns it.
func (t *batchTx) Conn() *pgx.Conn {
	_ = t.flush(context.Background())
	return t.handlerTx.Tx.Conn()
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
