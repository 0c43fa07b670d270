package inbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/inbox"
)

// item is a delivery that is only ever queued and taken.
type item struct {
	consumer.Delivery
	id   int
	dead bool
}

func ids(t *testing.T, ds []consumer.Delivery) []int {
	t.Helper()
	out := make([]int, len(ds))
	for i, d := range ds {
		out[i] = d.(*item).id
	}
	return out
}

// TestReceiveBatches: Receive returns what is queued, in order, up to its
// max, drops dead deliveries (calling Taken for every delivery that left),
// waits for a Put, and ends with ctx or closing. It catches a Receive that
// hands out one delivery a call, loses the rest of a batch, or hands out a
// delivery of a lost lease.
func TestReceiveBatches(t *testing.T) {
	defer goleak.VerifyNone(t)
	var taken []int
	b := inbox.New(inbox.Config[*item]{
		Live:  func(d *item) bool { return !d.dead },
		Taken: func(d *item) { taken = append(taken, d.id) },
	})
	for i := range 5 {
		b.Put(&item{id: i, dead: i == 1})
	}
	ctx, cancel := context.WithTimeout(context.Background(), adaptertest.WaitTimeout)
	defer cancel()
	closing := make(chan struct{})
	ds, err := b.Receive(ctx, closing, 3)
	if err != nil || len(ds) != 3 || ids(t, ds)[0] != 0 || ids(t, ds)[1] != 2 || ids(t, ds)[2] != 3 {
		t.Fatalf("first Receive: %v %v, want [0 2 3] (1 dead)", ids(t, ds), err)
	}
	if len(taken) != 4 || b.Len() != 1 {
		t.Fatalf("Taken for %v, %d left; want 0-3 taken, 1 left", taken, b.Len())
	}
	b.Remove(func(d *item) bool { return d.id == 4 })
	got := make(chan []consumer.Delivery, 1)
	go func() {
		ds, _ := b.Receive(ctx, closing, 10)
		got <- ds
	}()
	b.Put(&item{id: 5})
	if ds := <-got; len(ds) != 1 || ids(t, ds)[0] != 5 {
		t.Fatalf("Receive after Remove and Put: %v, want [5]", ids(t, ds))
	}

	short, stop := context.WithTimeout(ctx, 10*time.Millisecond)
	defer stop()
	if _, err := b.Receive(short, closing, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Receive on an empty inbox: %v, want the context's error", err)
	}
	b.Put(&item{id: 6})
	close(closing)
	if _, err := b.Receive(ctx, closing, 1); !errors.Is(err, consumer.ErrSourceClosed) {
		t.Fatalf("Receive once closing: %v, want ErrSourceClosed", err)
	}
}
