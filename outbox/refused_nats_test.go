package outbox_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/retry"
)

// TestNATSRefusesOversizedRow publishes to real NATS JetStream a row over
// the server's max_payload (1 MiB) between rows of its own and another
// key. The other key publishes, the oversized row goes to outbox_dead with
// the client's reason (its one attempt spent), and its key's next row
// publishes after it.
func TestNATSRefusesOversizedRow(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	ab, err := adapters.Open(ctx, envtest.NATS(t), adapters.WithLogger(quiet()))
	if err != nil {
		envtest.Missing(t, "NATS", err)
		return
	}
	defer ab.Close()
	b := newRecorder(ab)
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	dest := "outbox-refused-" + hex.EncodeToString(suffix[:])
	s := sender(t, db)
	big := &consumer.Message{ID: "big", Key: "a", Body: bytes.Repeat([]byte{'x'}, 1<<20+1)}
	sendTx(t, db, s, dest, big, msg("a2", "a", "1"), msg("b1", "b", "1"))
	startRelay(t, newRelay(t, db, b, outbox.Config{Workers: 1, Refused: retry.Policy{MaxAttempts: 1}}))

	b.waitDistinct(t, 2)
	got := ids(b.snapshot())
	require.Equal(t, []string{"b1", "a2"}, got, "b1 in the round that refused big, a2 once big was dead-lettered")
	waitUnpublished(t, db, 0)
	dl, err := outbox.NewDeadLetters(db.Pool, db.Schema)
	require.NoError(t, err)
	dead, err := dl.List(ctx, outbox.DeadFilter{Destination: dest})
	require.NoError(t, err)
	require.Len(t, dead, 1)
	require.Equal(t, "big", dead[0].Message.ID)
	require.Equal(t, 1, dead[0].Attempts)
	require.Contains(t, dead[0].Reason, "maximum payload")
	require.Len(t, dead[0].Message.Body, len(big.Body))
}
