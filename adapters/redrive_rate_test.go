package adapters

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/oncely/oncely/consumer"
)

// slowSession is a fakeSession whose first read takes readTime, as a
// destination read over the network does (SQS waits for empty receives).
type slowSession struct {
	fakeSession
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
	return s.fakeSession.next(ctx, n)
}

// TestRedriveRateAfterSlowRead: a redrive at Rate moves no two messages
// closer than 1/Rate, also when reading the destination took longer than
// the whole schedule. The bug it catches (seen on SQS in the console's
// browser test): a schedule anchored before the read, so every message
// whose slot passed during it goes out at once.
func TestRedriveRateAfterSlowRead(t *testing.T) {
	const rate, n = 20.0, 5
	interval := time.Duration(float64(time.Second) / rate)
	s := &slowSession{readTime: n * interval}
	for i := range n {
		s.letters = append(s.letters, &consumer.Message{ID: fmt.Sprintf("m%d", i)})
	}
	var at []time.Time
	res, err := redrive(t.Context(), s, func(context.Context, *consumer.Message) error {
		at = append(at, time.Now())
		return nil
	}, RedriveOptions{Rate: rate})
	if err != nil || res.Redriven != n {
		t.Fatalf("redriven %d, %v; want %d", res.Redriven, err, n)
	}
	for i := 1; i < len(at); i++ {
		// Half the interval: a move starts at least a whole interval after
		// the previous one started; its publish may lag a little.
		if gap := at[i].Sub(at[i-1]); gap < interval/2 {
			t.Errorf("moves %d and %d %v apart, want about %v (rate %g/s)", i-1, i, gap, interval, rate)
		}
	}
}
