// Package courier records parcel scans from the depots' handhelds.
package courier

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/oncely/oncely/consumer"

	"heldout8/courier/parcel"
)

// ScanHandler is the consumer's handler; it runs behind the Postgres claim,
// so the tracker writes in the claim's transaction.
type ScanHandler struct {
	Tracker parcel.Tracker
	Depots  map[string]bool
}

// Handle records one scan.
func (h ScanHandler) Handle(ctx context.Context, msg *consumer.Message) error {
	var s parcel.Scan
	if err := json.Unmarshal(msg.Body, &s); err != nil {
		return consumer.Permanent(err)
	}
	if !h.Depots[s.Depot] {
		return consumer.Permanent(fmt.Errorf("%s: %w", s.Depot, parcel.ErrUnknownDepot))
	}
	if err := h.Tracker.RecordScan(ctx, s); err != nil {
		return err
	}
	if s.Delivered() {
		return h.Tracker.CloseParcel(ctx, s.Barcode, s.At)
	}
	return nil
}
