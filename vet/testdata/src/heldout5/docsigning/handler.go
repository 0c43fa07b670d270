package docsigning

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type signed struct {
	EnvelopeID string `json:"envelope_id"`
	SignerID   string `json:"signer_id"`
	PDF        []byte `json:"pdf"`
}

// Handler records signatures.
type Handler struct {
	Archive *Archive
}

// Handle records one signature and archives the signed document.
func (h *Handler) Handle(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errors.New("docsigning: handler must run behind the Postgres claim")
	}
	var s signed
	if err := json.Unmarshal(msg.Body, &s); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE envelopes SET status = 'signed', signer_id = $2 WHERE id = $1`, s.EnvelopeID, s.SignerID); err != nil {
		return err
	}
	key := fmt.Sprintf("signed/%s.pdf", s.EnvelopeID)
	if err := h.Archive.Put(ctx, key, s.PDF); err != nil { // want "signed PDF uploaded to S3 inside the handler"
		return fmt.Errorf("archive %s: %w", key, err)
	}
	return nil
}

// Run consumes signature events.
func Run(ctx context.Context, pool *pgxpool.Pool, src consumer.Source, archive *Archive) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	c, err := consumer.New(src, &Handler{Archive: archive}, consumer.Config{Name: "docsigning"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
