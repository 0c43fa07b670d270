package adapters

import "github.com/oncely/oncely/adapters/internal/startpos"

// startParam reads start=earliest|latest|TIME, the start position of a new
// consumer on the log brokers, and reports a bad value.
func startParam(q *query) string {
	v := q.str("start")
	if _, err := startpos.Parse(v); err != nil {
		q.fail("start=%q: want earliest, latest or an RFC 3339 time such as 2026-12-07T03:00:00Z", v)
	}
	return v
}
