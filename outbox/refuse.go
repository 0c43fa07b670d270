package outbox

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// maxReason bounds the broker's reason kept with a refused or dead row.
const maxReason = 8 << 10

// Statements of refuse: retrySQL counts a refusal and sets the row's
// retry_at; deadSQL moves rows out of the outbox into outbox_dead in one
// statement, so a dead row is never in both tables nor in neither.
const (
	retrySQL = `UPDATE %s o SET attempts = u.attempts, retry_at = now() + make_interval(secs => u.delay), last_error = u.reason
FROM unnest($1::bigint[], $2::int[], $3::float8[], $4::text[]) AS u(seq, attempts, delay, reason)
WHERE o.seq = u.seq`
	deadSQL = `WITH moved AS (
  DELETE FROM %s o USING unnest($1::bigint[], $2::int[], $3::text[]) AS u(seq, attempts, reason)
  WHERE o.seq = u.seq
  RETURNING o.seq, o.message_id, o.destination, o.msg_key, o.body, o.headers, o.cause, o.created_at, u.attempts, u.reason)
INSERT INTO %s (seq, message_id, destination, msg_key, body, headers, cause, created_at, attempts, reason)
SELECT * FROM moved`
)

// refuse records rows the broker refused, in the round's transaction: each
// counts one more attempt and, while Config.Refused has attempts left,
// waits Refused.Delay(attempts) with its reason (its key waits behind it,
// see readySQL); a row out of attempts moves to outbox_dead, which releases
// its key. It returns the rows moved.
func (r *Relay) refuse(ctx context.Context, tx pgx.Tx, refused []refusal) (dead []refusal, err error) {
	if len(refused) == 0 {
		return nil, nil
	}
	var (
		retrySeqs, deadSeqs         []int64
		retryAttempts, deadAttempts []int
		retryDelays                 []float64
		retryReasons, deadReasons   []string
	)
	for _, f := range refused {
		n := f.row.attempts + 1
		reason := reasonText(f.err)
		if r.cfg.Refused.Exhausted(n) {
			dead = append(dead, f)
			deadSeqs, deadAttempts, deadReasons = append(deadSeqs, f.row.seq), append(deadAttempts, n), append(deadReasons, reason)
			continue
		}
		retrySeqs, retryAttempts, retryReasons = append(retrySeqs, f.row.seq), append(retryAttempts, n), append(retryReasons, reason)
		retryDelays = append(retryDelays, r.cfg.Refused.Delay(n, nil).Seconds())
	}
	if len(retrySeqs) > 0 {
		if _, err := tx.Exec(ctx, fmt.Sprintf(retrySQL, r.table), retrySeqs, retryAttempts, retryDelays, retryReasons); err != nil {
			return nil, fmt.Errorf("record refused rows: %w", err)
		}
	}
	if len(deadSeqs) > 0 {
		if _, err := tx.Exec(ctx, fmt.Sprintf(deadSQL, r.table, r.deadTable), deadSeqs, deadAttempts, deadReasons); err != nil {
			return nil, fmt.Errorf("dead-letter refused rows: %w", err)
		}
	}
	return dead, nil
}

// logRefused logs the rows refuse recorded, once it committed.
func (r *Relay) logRefused(refused, dead []refusal) {
	isDead := make(map[int64]bool, len(dead))
	for _, f := range dead {
		isDead[f.row.seq] = true
	}
	for _, f := range refused {
		attrs := []any{"schema", r.cfg.Schema, "destination", f.row.destination, "key", f.row.msg.Key,
			"seq", f.row.seq, "message_id", f.row.msg.ID, "attempt", f.row.attempts + 1, "error", f.err}
		if isDead[f.row.seq] {
			r.cfg.Logger.Error("outbox relay: the broker refused a row until its attempts ran out; moved it to "+DeadTable+", its key goes on", attrs...)
			continue
		}
		attrs = append(attrs, "retry_in", r.cfg.Refused.BaseDelay(f.row.attempts+1).String())
		r.cfg.Logger.Warn("outbox relay: the broker refused a row while others of its destination passed; its key waits", attrs...)
	}
}

// reasonText is err as a reason column: valid UTF-8 without NUL (Postgres
// text takes neither), at most maxReason bytes.
func reasonText(err error) string {
	s := strings.ToValidUTF8(strings.ReplaceAll(err.Error(), "\x00", ""), "\uFFFD")
	if len(s) > maxReason {
		s = strings.ToValidUTF8(s[:maxReason], "")
	}
	return s
}
