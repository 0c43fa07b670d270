// Package postgres is the Postgres implementation of store.Store, on pgx/v5's
// pgxpool. It records that a message was processed in the same transaction as
// the handler's effects ("claim first"), so a redelivered message does nothing.
//
// Per delivery, in one transaction:
//
//	BEGIN
//	INSERT INTO <schema>.processed_messages (consumer, message_id) VALUES ($1, $2) ON CONFLICT DO NOTHING
//	-- 0 rows: duplicate → COMMIT, skip the handler, Process returns duplicate = true
//	-- 1 row: run the handler with the transaction (Tx, HandlerFunc)
//	COMMIT   -- or ROLLBACK when the handler fails; the claim disappears with it
//
// A concurrent copy of the same message blocks on the primary key until the
// first transaction ends, then sees the conflict, so concurrent duplicates run
// the handler once. BEGIN and the claim travel in one round trip
// (pgx.Batch.BeginTx).
//
// # Batch mode
//
// With Config.BatchSize > 1, up to BatchSize concurrent Process calls (waiting
// at most Config.BatchLinger for the batch to fill) share one transaction:
//
//	BEGIN; INSERT … SELECT unnest($1, $2) ON CONFLICT DO NOTHING RETURNING …   -- one round trip
//	per claimed message, in arrival order:
//	    [RELEASE SAVEPOINT oncely_msg;] SAVEPOINT oncely_msg  -- sent with the handler's first statement;
//	                                                          -- RELEASE closes the previous message's
//	    handler
//	    on failure: ROLLBACK TO SAVEPOINT oncely_msg; DELETE its claim   -- this message only
//	COMMIT   -- then every caller gets its answer
//
// A failing message is reported alone (its error, unchanged) and the others
// commit together; every caller returns only after the COMMIT, so its
// delivery is acked only once its work is durable. If the server rejects the
// COMMIT (a deferred constraint, a serialization failure), nothing of the
// batch persisted: its messages that had succeeded run again one by one, each
// in its own transaction as in single-message mode, so only the offender
// fails. When the batch's transaction is lost instead (its connection
// closed — a backend the server terminated, an idle-in-transaction timeout, a
// handler's interrupted statement — or a COMMIT of unknown outcome), the store
// pings the database: if it answers, the batch's messages without an error
// run again one by one in their own transactions (the claims decide what a
// lost COMMIT did: a message that did commit comes back as a duplicate), so
// batch-mates are not charged for another message's failure; if it does not,
// every caller gets consumer.UnavailableFrom (an outage). Handlers run one
// after another on the store's goroutine, because a transaction is not safe for
// concurrent use; while one batch commits, the next one already runs. A
// message run again alone runs on its caller's goroutine, so when it waits for
// a row lock that the next batch holds, that batch commits meanwhile. A
// second copy of a message inside one batch is a duplicate if the first copy
// succeeded, and runs if it failed. A handler must not use its transaction
// after returning, and should not leave its caller's context to be cancelled
// in the middle of a statement: pgx then closes the connection, which loses
// the batch's transaction as above (nothing is lost).
//
// Batch mode saves, per message, the round trips of BEGIN, the claim and
// COMMIT and the COMMIT's WAL flush, but not the handler's own round trips:
// those run one after another on one connection, so a batch lasts at least
// BatchSize × (the handler's statements) round trips. It pays off when
// commits or connections are the bottleneck; with a distant database and a
// handler of several statements, single-message mode over a pool of
// connections can be faster. Batches are not run side by side: two open
// batches each holding row locks that the other one needs would deadlock.
// Keep BatchSize at most 64: every message that writes takes a subtransaction
// ID, and beyond 64 per transaction PostgreSQL's subtransaction cache
// overflows, which slows every other session's visibility checks while the
// batch is open.
//
// # Errors
//
// Outage or the message's failure is decided by probing the database, not by
// the error's type. The Store is a consumer.Prober: Probe runs one cheap
// statement on a new session (a server shutting down or starting up refuses
// new sessions at once, while a pooled one may still answer) and fails when
// the database cannot be reached, is read-only, the claims table is missing,
// or the Store is closed. Errors that blame the store are wrapped with
// consumer.UnavailableFrom(err, store): the runtime probes, holds the delivery
// as an outage when Probe fails, and otherwise treats the failure as this
// message's (an attempt: retried, then dead-lettered). The rule:
//
//   - A failure of the store's own statements (acquiring a connection,
//     BEGIN, the claim, SAVEPOINT, COMMIT) is wrapped with
//     consumer.UnavailableFrom — with consumer.DownFrom when no connection
//     could be opened (refused, unreachable, "the database system is
//     starting up"): no message causes that, so it is an outage even when the
//     database is back by the time the runtime probes — except a data error (SQLSTATE class 22) that
//     the claim raises for the message's own values, such as an ID that is
//     not valid UTF-8 or holds a NUL byte (22021): that is returned as a
//     plain, retryable error, never as unavailable. A failed COMMIT is never
//     reported as success.
//   - In batch mode such a data error fails that message only: the batch
//     claims again one message per savepoint, the rejected message gets the
//     plain error, and the others run and commit.
//   - A handler's error is returned unchanged, except when it is a
//     connection-class error and carries no oncely marker (Permanent,
//     RetryAfter, Unavailable, a panic): a lost or refused connection
//     (pgconn.SafeToRetry, *pgconn.ConnectError, net.Error, io.EOF, reset or
//     refused), SQLSTATE class 08 (connection exception), 57P01
//     admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now,
//     53300 too_many_connections, or any error after which the transaction's
//     connection is closed. Those are wrapped with consumer.UnavailableFrom.
//     So a handler whose connection the server killed
//     (pg_terminate_backend, idle_in_transaction_session_timeout) while the
//     database answers others is the message's failure, and an unreachable
//     database is an outage. A cancelled or timed-out context
//     (context.Canceled, DeadlineExceeded) stays the handler's error even
//     though pgx closes the connection of an interrupted statement.
//     Serialization failures (40001) and deadlocks (40P01) stay the handler's
//     errors: they are contention, retried with the policy's backoff.
//   - A handler that returns nil although a statement in its transaction
//     failed gets a plain (retryable) error: its work cannot commit.
//   - A COMMIT the server rejects because of the handler's work (a deferred
//     constraint, a serialization failure) is returned as a plain error in
//     single-message mode: nothing committed. In batch mode the batch's
//     messages then run one by one, so it is returned for the offending
//     message only. A batch whose transaction is lost (connection closed,
//     COMMIT of unknown outcome) runs its other messages again one by one
//     while the database answers a ping, and otherwise fails every message
//     with consumer.UnavailableFrom.
//   - HandlerFunc without a store transaction in its context returns ErrNoTx
//     wrapped with consumer.Unavailable, with no dependency: a wiring
//     mistake is an outage whatever a probe says.
//
// Messages with an empty ID or an ID over store.MaxMessageIDLength bytes, and
// an empty consumer name, are rejected with a consumer.Permanent error before
// any SQL runs (the runtime dead-letters such messages before they get here;
// this is defence in depth).
//
// # Schema
//
// Migrate creates the schema (Config.Schema, default "oncely") and its tables
// from embedded, numbered SQL files, recording each applied version in
// <schema>.schema_migrations. Run it once per deployment (the CLI's
// `oncely migrate` calls it); New does not touch the database.
//
// # Retention
//
// Claims older than Config.Retention are removed by Prune (or RunPruner) in
// bounded batches. A message redelivered after its claim was pruned runs
// again, so the window must exceed the longest retry delay plus the expected
// dead-letter replay delay; see Config.MinRetention and ValidateRetention.
package postgres
