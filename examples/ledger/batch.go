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
// The accounts' statement also counts the payments into applied and returns
// each payment's seq, in batch order ($4, one account per payment): the
// account's new count less its payments in the batch plus the payment's
// rank among them. The row locks, held to commit, make seqs follow commit
// order.
const (
	applyAccountsSQL = `WITH upd AS (
		INSERT INTO ledger_accounts (account, balance_cents, applied)
		SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[])
		ON CONFLICT (account) DO UPDATE SET balance_cents = ledger_accounts.balance_cents + EXCLUDED.balance_cents,
			applied = ledger_accounts.applied + EXCLUDED.applied
		RETURNING account, applied)
	SELECT upd.applied - count(*) OVER w + row_number() OVER (w ORDER BY p.ord)
	FROM unnest($4::text[]) WITH ORDINALITY AS p(account, ord) JOIN upd USING (account)
	WINDOW w AS (PARTITION BY p.account)
	ORDER BY p.ord`
	insertEntriesSQL = `INSERT INTO ledger_entries (message_id, account, amount_cents)
		SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])`
)

// batchHandler applies a batch of payments with the two set-based
// statements, in the idempotency claim's transaction: the -batch handler.
// It sees only payments not applied before. A payment that cannot be
// decoded (permanent) or is for the poison account (retryable) is named in
// a consumer.BatchError, so the rest of the batch runs again without it.
type batchHandler struct {
	delay  time.Duration
	events *events
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
	return applyBatch(ctx, tx, msgs, payments, h.events)
}

// applyBatch is the batch's effect: each account's balance once, summed,
// one ledger entry per payment, and each payment's ledger.applied event (ev
// nil: none) in one outbox.SendBatch, caused by that payment, so its ID
// derives from the payment's as in the single-payment handler.
func applyBatch(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message, payments []payment, ev *events) error {
	sums := make(map[string]int64, len(payments))
	counts := make(map[string]int64, len(payments))
	ids := make([]string, len(msgs))
	accounts := make([]string, len(msgs))
	amounts := make([]int64, len(msgs))
	for i, p := range payments {
		sums[p.Account] += p.AmountCents
		counts[p.Account]++
		ids[i], accounts[i], amounts[i] = msgs[i].ID, p.Account, p.AmountCents
	}
	touched := make([]string, 0, len(sums))
	for a := range sums {
		touched = append(touched, a)
	}
	slices.Sort(touched)
	totals := make([]int64, len(touched))
	applied := make([]int64, len(touched))
	for i, a := range touched {
		totals[i], applied[i] = sums[a], counts[a]
	}
	var b pgx.Batch
	b.Queue(applyAccountsSQL, touched, totals, applied, accounts)
	b.Queue(insertEntriesSQL, ids, accounts, amounts)
	br := tx.SendBatch(ctx, &b)
	rows, err := br.Query()
	var seqs []int64
	if err == nil {
		seqs, err = pgx.CollectRows(rows, pgx.RowTo[int64])
	}
	if err == nil && len(seqs) != len(msgs) {
		err = fmt.Errorf("%d seqs for %d payments", len(seqs), len(msgs))
	}
	if err != nil {
		_ = br.Close()
		return fmt.Errorf("updating %d accounts: %w", len(touched), err)
	}
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return fmt.Errorf("inserting %d ledger entries: %w", len(ids), err)
	}
	if err := br.Close(); err != nil {
		return err
	}
	return ev.sendBatch(ctx, tx, msgs, payments, seqs)
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
