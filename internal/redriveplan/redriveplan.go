// Package redriveplan tells, before a dead-letter redrive, which of the
// selected dead letters were in fact applied (their consumer's idempotency
// claim exists, so the redrive is a no-op for them) and which not (the
// redrive runs their handler). It changes nothing. The oncely dlq redrive
// --plan command and the console both use it.
package redriveplan

import (
	"context"
	"fmt"

	"github.com/oncely/oncely/adapters"
)

// Lister is the part of adapters.Broker that Make reads.
type Lister interface {
	DeadLetters(ctx context.Context, source, consumerName string, limit int) ([]adapters.DeadLetter, error)
}

// Claims reports which message IDs have a claim for a consumer;
// store/postgres.Store implements it.
type Claims interface {
	Claimed(ctx context.Context, consumerName string, messageIDs []string) (map[string]bool, error)
}

// Plan is what a redrive with given options would do.
type Plan struct {
	Source   string `json:"source"`
	Consumer string `json:"consumer"`
	// Seen counts the dead letters looked at (the whole destination),
	// Selected those the options select (at most their Limit).
	Seen     int `json:"seen"`
	Selected int `json:"selected"`
	// Applied are the selected IDs with an idempotency claim of the
	// consumer: their handler committed, and a redrive is a no-op for them.
	// NotApplied are the rest: a redrive runs their handler. Both in the
	// destination's order; never nil.
	Applied    []string `json:"applied"`
	NotApplied []string `json:"not_applied"`
	// IDs are the selected IDs in the destination's order.
	IDs []string `json:"-"`
	// Letters holds the selected dead letters by ID.
	Letters map[string]adapters.DeadLetter `json:"-"`

	claimed map[string]bool
}

// Make reads every dead letter of (source, consumerName), selects them with
// opts (Reason, ErrorContains, ID, Match and Limit; Rate, DryRun and
// Progress are ignored) and looks their claims up under consumerName, the
// name the consumer claims with. Errors from l (adapters.ErrNoSource, say)
// are returned wrapped.
func Make(ctx context.Context, l Lister, claims Claims, source, consumerName string, opts adapters.RedriveOptions) (Plan, error) {
	dls, err := l.DeadLetters(ctx, source, consumerName, 0)
	if err != nil {
		return Plan{}, fmt.Errorf("reading the dead letters: %w", err)
	}
	p := Plan{Source: source, Consumer: consumerName, Seen: len(dls), Applied: []string{}, NotApplied: []string{},
		Letters: map[string]adapters.DeadLetter{}}
	var ids []string
	for _, d := range dls {
		if !opts.Selects(d) || (opts.Limit > 0 && len(ids) == opts.Limit) {
			continue
		}
		ids = append(ids, d.Message.ID)
		p.Letters[d.Message.ID] = d
	}
	p.Selected, p.IDs = len(ids), ids
	claimed, err := claims.Claimed(ctx, consumerName, ids)
	if err != nil {
		return Plan{}, fmt.Errorf("reading the idempotency claims: %w", err)
	}
	p.claimed = claimed
	for _, id := range ids {
		if claimed[id] {
			p.Applied = append(p.Applied, id)
		} else {
			p.NotApplied = append(p.NotApplied, id)
		}
	}
	return p, nil
}

// IsApplied reports whether the selected dead letter id has a claim.
func (p Plan) IsApplied(id string) bool { return p.claimed[id] }
