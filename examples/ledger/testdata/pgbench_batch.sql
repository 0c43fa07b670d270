-- One batch of the ledger's batch handler, as ProcessBatch and applyBatch
-- send it: the claim of 500 message IDs, the upsert of the accounts they
-- touch (summed, sorted), the insert of 500 entries, in one transaction.
-- 500 payments over 1,000 accounts as in BenchmarkLedgerKafka: payment g of
-- the batch is for account hashint8(:r * 1000 + g) mod 1000 (about 390
-- accounts per batch) and g mod 100 + 1 cents. IDs carry :client_id and a
-- random :r, so batches never claim the same IDs. Run pgbench_setup.sql
-- first; see docs/benchmarks.md for the command.
\set r random(1, 1000000000000000)
BEGIN;
INSERT INTO ledger_pgbench.processed_messages (consumer, message_id)
    SELECT 'pgbench', 'pg-' || :client_id || '-' || :r::bigint || '-' || g FROM generate_series(1, 500) g
    ON CONFLICT DO NOTHING RETURNING message_id;
INSERT INTO ledger_pgbench.ledger_accounts (account, balance_cents)
    SELECT 'acc-' || abs(hashint8(:r::bigint * 1000 + g) % 1000), sum(g % 100 + 1) FROM generate_series(1, 500) g
    GROUP BY 1 ORDER BY 1
    ON CONFLICT (account) DO UPDATE SET balance_cents = ledger_pgbench.ledger_accounts.balance_cents + EXCLUDED.balance_cents;
INSERT INTO ledger_pgbench.ledger_entries (message_id, account, amount_cents)
    SELECT 'pg-' || :client_id || '-' || :r::bigint || '-' || g, 'acc-' || abs(hashint8(:r::bigint * 1000 + g) % 1000), g % 100 + 1
    FROM generate_series(1, 500) g;
END;
