package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/oncely/oncely/consumer"
)

// ErrClosed is returned by Process after Close, wrapped with
// consumer.UnavailableFrom and the Store as the dependency; Probe reports it
// too, so the runtime holds the delivery instead of retrying or dead-lettering
// it.
var ErrClosed = errors.New("postgres store: closed")

// ErrTxOwned is returned by Commit and Rollback of the transaction a handler
// receives: the store ends the transaction. Return nil to commit, an error to
// roll back.
var ErrTxOwned = errors.New("postgres store: the transaction belongs to the store; return nil from the handler to commit or an error to roll back")

// ErrNoTx is returned (wrapped with consumer.Unavailable, so messages are held
// rather than dead-lettered while the wiring is wrong) by a HandlerFunc called
// without a store transaction in its context: the chain lacks the idempotency
// middleware for this store.
var ErrNoTx = errors.New("postgres store: no transaction in context; is the idempotency middleware with the postgres store in the chain?")

// storeError classifies a failure of the store's own statement op (BEGIN,
// the claim, COMMIT of a duplicate) for one message. A data error (SQLSTATE
// class 22, such as a message ID that is not valid UTF-8 or holds a NUL byte)
// is the database refusing this message's values: a plain, retryable error.
// Anything else is wrapped with consumer.UnavailableFrom(…, s): the runtime
// probes the database and calls it an outage only when the probe fails.
func (s *Store) storeError(op string, err error) error {
	if isDataError(err) {
		return fmt.Errorf("postgres store: %s: the database rejects this message: %w", op, err)
	}
	return s.unavailable(op, err)
}

// unavailable wraps a failure of the store's own statement op with
// consumer.UnavailableFrom, naming s as the dependency to probe — or, when no
// connection could be opened (refused, unreachable, the server starting up
// or shutting down), with consumer.DownFrom: no message can cause that, so it
// is an outage even if the database is back by the time the runtime probes.
func (s *Store) unavailable(op string, err error) error {
	err = fmt.Errorf("postgres store: %s: %w", op, err)
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return consumer.DownFrom(err, s)
	}
	return consumer.UnavailableFrom(err, s)
}

// handlerError applies the package's rule to an error returned by a handler:
// unchanged, unless it is a connection-class error without an oncely marker
// (or connLost reports the transaction's connection gone), which is wrapped
// with consumer.UnavailableFrom(…, s). So a connection the server killed while
// the database answers others (pg_terminate_backend,
// idle_in_transaction_session_timeout) is this message's failure, and only a
// database that does not answer the probe is an outage.
func (s *Store) handlerError(err error, connLost bool) error {
	if hasMarker(err) || isContextError(err) {
		return err
	}
	if connLost || IsConnectionError(err) {
		return consumer.UnavailableFrom(err, s)
	}
	return err
}

// isDataError reports a server error of SQLSTATE class 22 (data exception):
// a value the database cannot accept, such as a string that is not valid
// UTF-8 or holds a NUL byte (22021).
func isDataError(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "22")
}

// hasMarker reports whether err already says how it should be settled.
func hasMarker(err error) bool {
	var (
		pe *consumer.PermanentError
		ue *consumer.UnavailableError
		re *consumer.RetryAfterError
		xe *consumer.PanicError
	)
	return errors.As(err, &pe) || errors.As(err, &ue) || errors.As(err, &re) || errors.As(err, &xe)
}

// isContextError reports a cancelled or timed-out context: the caller's
// decision (a handler timeout, a hard stop), not an outage, even though pgx
// closes the connection of a statement it interrupts.
func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// IsConnectionError reports whether err means the database could not be
// reached or the connection to it failed, rather than a statement failing:
// pgconn.SafeToRetry errors, *pgconn.ConnectError, network errors (net.Error,
// io.EOF, connection reset, refused or broken pipe), and server errors of
// SQLSTATE class 08 or codes 57P01, 57P02, 57P03 and 53300. Context
// cancellation and deadlines are not connection errors. Handlers' errors of
// this kind are reported wrapped with consumer.UnavailableFrom, naming the
// Store as the dependency to probe.
func IsConnectionError(err error) bool {
	if err == nil || isContextError(err) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case len(pgErr.Code) == 5 && pgErr.Code[:2] == "08":
			return true
		case pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03", pgErr.Code == "53300":
			return true
		}
		return false
	}
	if pgconn.SafeToRetry(err) {
		return true
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed)
}
