// Package pgx is a stub of github.com/jackc/pgx/v5.
package pgx

import "context"

type CommandTag struct{}
type Rows interface{ Close() }
type Row interface{ Scan(dest ...any) error }
type Batch struct{}

func (b *Batch) Queue(sql string, args ...any) {}

type BatchResults interface{ Close() error }
type Identifier []string
type CopyFromSource interface{ Next() bool }

type Tx interface {
	Begin(ctx context.Context) (Tx, error)
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
	Exec(ctx context.Context, sql string, args ...any) (CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) Row
	SendBatch(ctx context.Context, b *Batch) BatchResults
	CopyFrom(ctx context.Context, table Identifier, columns []string, src CopyFromSource) (int64, error)
	Conn() *Conn
}

type Conn struct{}

func (c *Conn) Exec(ctx context.Context, sql string, args ...any) (CommandTag, error) {
	return CommandTag{}, nil
}
func (c *Conn) QueryRow(ctx context.Context, sql string, args ...any) Row { return nil }
func (c *Conn) Begin(ctx context.Context) (Tx, error)                     { return nil, nil }
func (c *Conn) Ping(ctx context.Context) error                            { return nil }

func BeginFunc(ctx context.Context, db interface {
	Begin(ctx context.Context) (Tx, error)
}, fn func(Tx) error) error {
	return nil
}
