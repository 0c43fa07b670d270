// Package requests records report requests; workers pick pending rows up
// from the table.
package requests

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

// Handler records report requests.
type Handler struct {
	MaxColumns int
}

type parsed struct {
	columns []string
	digest  string
	err     error
}

// parse reads the request's CSV header and digests the body; it stops
// early when ctx ends.
func parse(ctx context.Context, body []byte, max int) parsed {
	sc := bufio.NewScanner(bytes.NewReader(body))
	var p parsed
	if sc.Scan() {
		p.columns = strings.Split(sc.Text(), ",")
	}
	if len(p.columns) > max {
		p.err = consumer.Permanent(errTooWide)
		return p
	}
	h := sha256.New()
	for sc.Scan() {
		if ctx.Err() != nil {
			p.err = ctx.Err()
			return p
		}
		h.Write(sc.Bytes())
	}
	p.digest = hex.EncodeToString(h.Sum(nil))
	return p
}

// Request records a pending report.
func (h *Handler) Request(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var p parsed
	done := make(chan struct{})
	go func() {
		defer close(done)
		p = parse(ctx, msg.Body, h.MaxColumns)
	}()
	<-done
	if p.err != nil {
		return p.err
	}
	_, err := tx.Exec(ctx, `INSERT INTO reports (id, columns, digest, status) VALUES ($1, $2, $3, 'pending')
		ON CONFLICT (digest) DO NOTHING`, msg.ID, p.columns, p.digest)
	return err
}

// Cancel marks a pending report cancelled.
func (h *Handler) Cancel(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	_, err := tx.Exec(ctx, `UPDATE reports SET status = 'cancelled' WHERE id = $1 AND status = 'pending'`, msg.Key)
	return err
}
