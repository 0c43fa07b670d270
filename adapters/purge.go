package adapters

import (
	"context"
	"errors"
	"fmt"
)

// PurgeOptions selects the dead letters Broker.Purge deletes, with the same
// filters as RedriveOptions. The zero value deletes every dead letter.
type PurgeOptions struct {
	// Reason selects dead letters with exactly this dead-letter reason.
	// Empty selects any reason.
	Reason string

	// ErrorContains selects dead letters whose recorded error contains this
	// text. Empty selects any error.
	ErrorContains string

	// ID selects the dead letter with exactly this message ID. Empty
	// selects any ID.
	ID string

	// Match, when set, must also report true for a dead letter to be
	// selected. Nil selects everything. It is called once per dead letter
	// looked at (not for further copies of a purged ID, which go with it)
	// and must not block.
	Match func(DeadLetter) bool

	// Limit stops after this many purged message IDs. Zero means no limit.
	Limit int

	// DryRun selects and counts without deleting anything.
	DryRun bool
}

// Selects reports whether opts select d.
func (o PurgeOptions) Selects(d DeadLetter) bool {
	return selects(d, o.Reason, o.ErrorContains, o.ID, o.Match)
}

// PurgeResult is the outcome of Broker.Purge.
type PurgeResult struct {
	// Seen is the number of dead letters looked at.
	Seen int
	// Purged is the number of message IDs deleted (on a dry run: that
	// would have been), every copy of each.
	Purged int
	// Skipped is the number of dead letters the filters left in place.
	Skipped int
	// DuplicateCopies is the number of extra copies of a purged message ID
	// deleted with it.
	DuplicateCopies int
}

// purge deletes the session's selected letters, one at a time, and every
// further copy of a purged ID.
func purge(ctx context.Context, s dlqSession, opts PurgeOptions) (res PurgeResult, err error) {
	defer func() { err = errors.Join(err, s.close(context.WithoutCancel(ctx))) }()
	if opts.Limit < 0 {
		return res, fmt.Errorf("purge: Limit must be >= 0 (0 = unlimited), got %d", opts.Limit)
	}
	done := map[string]bool{}
	for {
		hs, err := s.next(ctx, dlqBatch)
		if err != nil || len(hs) == 0 {
			return res, err
		}
		for _, h := range hs {
			res.Seen++
			switch again := h.msg.ID != "" && done[h.msg.ID]; {
			case !again && !opts.Selects(DeadLetter{Message: h.msg, Copies: 1}):
				res.Skipped++
				continue
			case !again && opts.Limit > 0 && res.Purged >= opts.Limit:
				res.Skipped++
				continue
			case again:
				res.DuplicateCopies++
			default:
				done[h.msg.ID] = true
				res.Purged++
			}
			if !opts.DryRun {
				if err := h.remove(ctx); err != nil {
					return res, fmt.Errorf("purge: deleting %q from the dead-letter destination: %w", h.msg.ID, err)
				}
			}
		}
	}
}

// Purge deletes the selected dead letters of (source, consumerName); see
// Broker.Purge.
func (k *kafkaBroker) Purge(ctx context.Context, source, consumerName string, opts PurgeOptions) (PurgeResult, error) {
	s, err := k.session(ctx, source, consumerName)
	if err != nil {
		return PurgeResult{}, err
	}
	return purge(ctx, s, opts)
}

// Purge deletes the selected dead letters of (source, consumerName); see
// Broker.Purge.
func (r *rabbitBroker) Purge(ctx context.Context, source, consumerName string, opts PurgeOptions) (PurgeResult, error) {
	s, err := r.session(ctx, source, consumerName, rabbitGetters)
	if err != nil {
		return PurgeResult{}, err
	}
	return purge(ctx, s, opts)
}

// Purge deletes the selected dead letters of (source, consumerName); see
// Broker.Purge.
func (s *sqsBroker) Purge(ctx context.Context, source, consumerName string, opts PurgeOptions) (PurgeResult, error) {
	sess, err := s.session(ctx, source, consumerName)
	if err != nil {
		return PurgeResult{}, err
	}
	return purge(ctx, sess, opts)
}

// Purge deletes the selected dead letters of (source, consumerName); see
// Broker.Purge.
func (m *memBroker) Purge(ctx context.Context, source, consumerName string, opts PurgeOptions) (PurgeResult, error) {
	s, err := m.session(ctx, source, consumerName)
	if err != nil {
		return PurgeResult{}, err
	}
	return purge(ctx, s, opts)
}
