// Package outbox is the transactional outbox for oncely's Postgres store:
// a handler sends follow-up messages as rows in its own transaction (Send),
// and a Relay publishes the committed rows through any adapters.Broker,
// marking each published only after the broker confirmed it.
//
// Guarantees: a message sent in a committed transaction is published at
// least once with its stable ID (downstream oncely consumers dedupe); no row
// is skipped whatever order transactions commit in; messages of one
// (destination, key) are published in commit order, also with several
// relays at once. See docs/outbox.md for the ordering argument, cleanup,
// PgBouncer and the alert rule.
package outbox
