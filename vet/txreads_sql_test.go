package vet

import "testing"

// TestSelectWrites pins which SELECTs are taken as reads through the pool:
// built-in aggregates and scalar functions are, and PostGIS's ST_
// functions; a schema function,
// nextval, an advisory lock, a locking read and SELECT … INTO are not.
func TestSelectWrites(t *testing.T) {
	for sql, writes := range map[string]bool{
		"SELECT count(*) FROM orders":                                      false,
		"SELECT coalesce(sum(cents), 0) FROM lines WHERE id = $1":          false,
		"SELECT id FROM t WHERE id IN($1, $2) AND note = 'refund(full)'":   false,
		"SELECT pg_catalog.current_setting('search_path')":                 false,
		"SELECT id FROM zones WHERE ST_Contains(area, ST_Point($2, $1))":   false,
		"SELECT nextval('invoice_numbers')":                                true,
		"SELECT pg_advisory_lock(hashtext($1))":                            true,
		"SELECT award_points($1, $2)":                                      true,
		"SELECT * FROM billing.close_period($1)":                           true,
		"SELECT id FROM jobs WHERE state = 'ready' FOR UPDATE SKIP LOCKED": true,
		"SELECT balance FROM accounts WHERE id = $1 for no key update":     true,
		"SELECT * INTO archive_2026 FROM orders":                           true,
	} {
		if got := selectWrites(sql); got != writes {
			t.Errorf("selectWrites(%q) = %v, want %v", sql, got, writes)
		}
	}
}
