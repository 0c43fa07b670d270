-- Tables for pgbench_batch.sql, the Postgres ceiling of the ledger's batch
-- handler (docs/benchmarks.md, "Batch handlers"): the oncely claims table
-- (store/postgres/migrations/0001_processed_messages.sql) and the ledger's
-- tables (tablesSQL in examples/ledger/app.go) in the schema ledger_pgbench.
DROP SCHEMA IF EXISTS ledger_pgbench CASCADE;
CREATE SCHEMA ledger_pgbench;
CREATE TABLE ledger_pgbench.processed_messages (
    consumer     text        NOT NULL,
    message_id   text        NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, message_id)
);
CREATE INDEX processed_messages_processed_at_idx ON ledger_pgbench.processed_messages (processed_at);
CREATE TABLE ledger_pgbench.ledger_accounts (
    account       text PRIMARY KEY,
    balance_cents bigint NOT NULL DEFAULT 0
);
CREATE TABLE ledger_pgbench.ledger_entries (
    id           bigserial PRIMARY KEY,
    message_id   text NOT NULL,
    account      text NOT NULL,
    amount_cents bigint NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ledger_entries_message_id ON ledger_pgbench.ledger_entries (message_id);
