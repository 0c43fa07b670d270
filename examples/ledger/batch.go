package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oncely/oncely/consumer"
)

// Set-based statements of the -batch handler: one for every account the
// batch touches, one for every entry. Accounts come sorted and summed, so
// an account appears once per statement (ON CONFLICT DO UPDATE refuses to
// touch a row twice) and concurrent batches lock accounts in one order.
const (
	applyAccountsSQL = `INSERT INTO ledger_accounts (account, balance_cents)
		SELECT * FROM unnest($1::text[], $2::bigint[])
		ON CONFLICT (account) DO UPDATE SET balance_cents = ledger_accounts.balance_cents + EXCLUDED.balance_cents`
	insertEntriesSQL = `INSERT INTO ledger_entries (message_id, account, amount_cents)
		SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])`
)

// batchHandler applies a batch of payments with the two set-based
// statements, in the idempotency claim's transaction: the -batch handler.
// It sees only payments not applied before. A payment that cannot be
// decoded (permanent) or is for the poison account (retryable) is named in
// a consumer.BatchError, so the rest of the batch runs again without it.
type batchHandler struct {
	delay time.Duration
}

// HandleBatch applies msgs in tx: one statement for the accounts, one for
// the entries, sent in one round trip.
func (h *batchHandler) HandleBatch(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	var failed map[int]error
	payments := make([]payment, len(msgs))
	for i, msg := range msgs {
		p, err := parse(msg)
		if err != nil {
			if failed == nil {
				failed = map[int]error{}
			}
			failed[i] = err
			continue
		}
		payments[i] = p
	}
	if failed != nil {
		return consumer.BatchError{Failed: failed}
	}
	if err := wait(ctx, h.delay); err != nil {
		return err
	}
	return applyBatch(ctx, tx, msgs, payments)
}

// applyBatch is the batch's effect: each account's balance once, summed,
// and one ledger entry per payment.
func applyBatch(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message, payments []payment) error {
	sums := make(map[string]int64, len(payments))
	ids := make([]string, len(msgs))
	accounts := make([]string, len(msgs))
	amounts := make([]int64, len(msgs))
	for i, p := range payments {
		sums[p.Account] += p.AmountCents
		ids[i], accounts[i], amounts[i] = msgs[i].ID, p.Account, p.AmountCents
	}
	touched := make([]string, 0, len(sums))
	for a := range sums {
		touched = append(touched, a)
	}
	slices.Sort(touched)
	totals := make([]int64, len(touched))
	for i, a := range touched {
		totals[i] = sums[a]
	}
	var b pgx.Batch
	b.Queue(applyAccountsSQL, touched, totals)
	b.Queue(insertEntriesSQL, ids, accounts, amounts)
	br := tx.SendBatch(ctx, &b)
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return fmt.Errorf("updating %d accounts: %w", len(touched), err)
	}
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return fmt.Errorf("inserting %d ledger entries: %w", len(ids), err)
	}
	return br.Close()
}

// parse decodes msg's payment and refuses the poison account.
func parse(msg *consumer.Message) (payment, error) {
	var p payment
	if err := json.Unmarshal(msg.Body, &p); err != nil {
		return p, consumer.Permanent(fmt.Errorf("decoding payment: %w", err))
	}
	if p.Account == "" {
		return p, consumer.Permanent(errors.New(`payment has no "account"`))
	}
	if p.Account == poisonAccount {
		return p, fmt.Errorf("account %q is rejected on every attempt", poisonAccount)
	}
	return p, nil
}

// wait waits delay (the simulated work) or until ctx is done.
func wait(ctx context.Context, delay time.Duration) error {
	if delay <= 0 {
		return nil
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
