// Package docsign prepares employment contracts for e-signature when a
// candidate accepts an offer.
package docsign

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"
)

type offerAccepted struct {
	OfferID  string   `json:"offer_id"`
	Employer string   `json:"employer"`
	Name     string   `json:"name"`
	Role     string   `json:"role"`
	Salary   string   `json:"salary"`
	Start    string   `json:"start"`
	Annexes  []string `json:"annexes"`
}

type preparer struct {
	renderTimeout time.Duration
}

func (p *preparer) prepare(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var offer offerAccepted
	if err := json.Unmarshal(msg.Body, &offer); err != nil {
		return consumer.Permanent(fmt.Errorf("decode offer: %w", err))
	}
	rctx, cancel := context.WithTimeout(ctx, p.renderTimeout)
	defer cancel()
	var (
		doc    []byte
		digest [32]byte
		err    error
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		doc, digest, err = render(rctx, offer)
	}()
	<-done
	if err != nil {
		return fmt.Errorf("contract for %s: %w", offer.OfferID, err)
	}
	sum := hex.EncodeToString(digest[:])
	if _, err := tx.Exec(ctx,
		`INSERT INTO contracts (offer_id, document, sha256, state) VALUES ($1, $2, $3, 'awaiting-signature')`,
		offer.OfferID, doc, sum); err != nil {
		return fmt.Errorf("store contract: %w", err)
	}
	body, err := json.Marshal(map[string]string{"offer_id": offer.OfferID, "sha256": sum})
	if err != nil {
		return err
	}
	return outbox.Send(ctx, tx, "esign.envelope-requested", &consumer.Message{ID: msg.ID + ":envelope", Key: offer.OfferID, Body: body})
}
