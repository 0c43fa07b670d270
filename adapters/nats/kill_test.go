package nats

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

// TestKilledSourceRedelivered: a Source whose process dies holding
// deliveries (its connection gone, nothing acked or given back) loses
// none: the server delivers each to the next Source once AckWait passes,
// within AckWait plus adaptertest.CloseDeadline, and none is handed out
// twice by it.
func TestKilledSourceRedelivered(t *testing.T) {
	const n = 5
	c := connect(t)
	cfg := Config{Source: adaptertest.SourceName("killed"), Consumer: "killed", AckWait: 2 * time.Second}
	c.cleanup(t, cfg.Source, cfg.Consumer)
	msgs := make([]*consumer.Message, n)
	for i := range msgs {
		msgs[i] = &consumer.Message{ID: fmt.Sprintf("killed-%d", i), Key: "k", Body: []byte("b")}
	}
	c.publish(t, cfg.Source, msgs...)

	deadCfg := cfg
	deadCfg.Logger = slog.New(slog.DiscardHandler) // its connection is gone: it only logs that
	dead := c.newSource(t, deadCfg)
	adaptertest.ReceiveN(t, dead, n, adaptertest.WaitTimeout)
	dead.nc.Close() // as the kernel does for a killed process
	killed := time.Now()
	defer func() { _ = dead.Close(context.Background()) }()

	heir := c.newSource(t, cfg)
	defer closeSrc(t, heir)
	ctx, cancel := context.WithTimeout(context.Background(), adaptertest.WaitTimeout)
	defer cancel()
	seen := map[string]bool{}
	for _, d := range adaptertest.ReceiveN(t, heir, n, cfg.AckWait+adaptertest.CloseDeadline) {
		m := d.Message()
		if seen[m.ID] || m.Attempt < 1 {
			t.Errorf("%s: handed out twice or with Attempt %d", m.ID, m.Attempt)
		}
		seen[m.ID] = true
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("the next Source got the %d deliveries of the killed one %.1f s after the kill", n, time.Since(killed).Seconds())
	adaptertest.AssertQuiet(t, heir, adaptertest.QuietWindow)
}
