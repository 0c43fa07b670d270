// Package ledgertransfer is the transfer-booking consumer of the core
// banking platform.
package ledgertransfer

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"

	"heldout4/ledgertransfer/transfers"
)

type handler struct {
	svc        *transfers.Service
	currencies map[string]bool
}

func (h *handler) handle(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var t transfers.Transfer
	if err := json.Unmarshal(msg.Body, &t); err != nil {
		return consumer.Permanent(fmt.Errorf("decode transfer: %w", err))
	}
	if !h.currencies[t.Currency] {
		return consumer.Permanent(fmt.Errorf("transfer %s: unsupported currency %q", t.ID, t.Currency))
	}
	return h.svc.Book(ctx, tx, t)
}
