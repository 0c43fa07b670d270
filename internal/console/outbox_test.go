package console

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/outbox"
)

// TestOutboxPage lists the outbox's dead rows with their reasons, oldest
// first, and says so when there are none.
func TestOutboxPage(t *testing.T) {
	f := newFixture(t, memBroker(t), nil)
	body := f.page("/outbox")
	require.Len(t, testids(body, "no-outbox-dead"), 1)
	require.Len(t, testids(body, "nav-outbox"), 1)

	_, err := f.db.Pool.Exec(context.Background(), `INSERT INTO `+pgx.Identifier{f.db.Schema, outbox.DeadTable}.Sanitize()+
		` (seq, message_id, destination, msg_key, body, headers, created_at, attempts, reason) VALUES
		(9, 'second', 'invoices', '', 'y', '{}', now(), 10, 'refused <b>'),
		(7, 'too-big', 'receipts', 'acc-1', 'x', '{}', now(), 10, 'nats: maximum payload exceeded')`)
	require.NoError(t, err)
	body = f.page("/outbox")
	require.Equal(t, []string{"too-big", "second"}, testids(body, "outbox-id"))
	require.Equal(t, []string{"receipts", "invoices"}, testids(body, "outbox-destination"))
	require.Equal(t, []string{"10", "10"}, testids(body, "outbox-attempts"))
	require.Equal(t, []string{"nats: maximum payload exceeded", "refused &lt;b&gt;"}, testids(body, "outbox-reason"))
	require.Empty(t, testids(body, "no-outbox-dead"))
}
