package adapters

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/consumer"
)

// slowSession is a dead-letter session whose first read takes readTime, as
// a destination read over the network does (SQS waits for empty receives).
type slowSession struct {
	dlqSession
	readTime time.Duration
	read     bool
}

func (s *slowSession) next(ctx context.Context, n int) ([]heldLetter, error) {
	if !s.read {
		s.read = true
		select {
		case <-time.After(s.readTime):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.dlqSession.next(ctx, n)
}

// TestRedriveRateAfterSlowRead: a redrive at Rate moves no two messages
// closer than 1/Rate, also when reading the destination took longer than
// the whole schedule. The bug it catches (seen on SQS in the console's
// browser test): a schedule anchored before the read, so every message
// whose slot passed during it goes out at once.
func TestRedriveRateAfterSlowRead(t *testing.T) {
	const rate, n = 20.0, 5
	interval := time.Duration(float64(time.Second) / rate)
	f := newFakeDLQ(t, n, func(int) string { return consumer.ReasonExhausted })
	var at []time.Time
	publish := func(ctx context.Context, msgs ...*consumer.Message) error {
		at = append(at, time.Now())
		return f.publish(ctx, msgs...)
	}
	res, err := redrive(t.Context(), &slowSession{dlqSession: f.session(false), readTime: n * interval}, publish, RedriveOptions{Rate: rate})
	require.NoError(t, err)
	require.Equal(t, n, res.Redriven)
	require.Len(t, at, n, "one message a batch at this rate")
	for i := 1; i < len(at); i++ {
		// Half the interval: a batch starts a whole interval after the
		// previous one started; its publish may lag a little.
		require.GreaterOrEqual(t, at[i].Sub(at[i-1]), interval/2, "moves %d and %d (rate %g/s)", i-1, i, rate)
	}
}
