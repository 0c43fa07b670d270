package effects

import (
	"context"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"
)

// journaler appends to a journal file it holds, and traces to a field
// set to os.Stderr; a Redis write naming a temporary file is still an
// effect.
type journaler struct {
	journal *os.File
	trace   *os.File
	rdb     *redis.Client
}

func (j *journaler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := j.journal.WriteString(m.ID + "\n"); err != nil { // want `the file write \(\*os.File\).WriteString on j.journal is an effect outside the database`
		return err
	}
	if _, err := j.trace.WriteString(m.ID + "\n"); err != nil {
		return err
	}
	if _, err := os.Stdout.WriteString(m.ID + "\n"); err != nil {
		return err
	}
	f, err := os.CreateTemp("", "scratch-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(m.Body); err != nil {
		return err
	}
	j.rdb.Set(ctx, "last-scratch", f.Name(), 0)                      // want `the Redis command Set is an effect outside the database`
	if err := os.Remove("/var/spool/outgoing/" + m.ID); err != nil { // want `the file-system write os.Remove is an effect outside the database`
		return err
	}
	_, err = tx.Exec(ctx, "INSERT INTO seen (id) VALUES ($1)", m.ID)
	return err
}

var _ = postgres.HandlerFunc((&journaler{trace: os.Stderr}).handle)
