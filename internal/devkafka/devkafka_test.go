package devkafka_test

import (
	"context"
	"log/slog"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/oncely/oncely/internal/devkafka"
)

// The dev cluster serves on the given port, creating topics on first use,
// until its context ends.
func TestCluster(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan []string, 1)
	done := make(chan error, 1)
	go func() {
		done <- devkafka.Cluster{Ports: []int{0}, Logger: slog.New(slog.DiscardHandler)}.Run(ctx, func(addrs []string) { ready <- addrs })
	}()
	addrs := <-ready
	require.Len(t, addrs, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.AllowAutoTopicCreation(), kgo.ConsumeTopics("dev-topic"))
	require.NoError(t, err)
	pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
	defer pcancel()
	require.NoError(t, cl.ProduceSync(pctx, &kgo.Record{Topic: "dev-topic", Value: []byte("hello")}).FirstErr())
	fetches := cl.PollRecords(pctx, 1)
	require.NoError(t, fetches.Err())
	require.Equal(t, "hello", string(fetches.Records()[0].Value))
	cl.Close()
	cancel()
	require.NoError(t, <-done)
}

// A program that uses the adapters links no fake broker: kfake reaches only
// the dev command and tests.
func TestAdaptersLinkNoFake(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/oncely/oncely/adapters", "github.com/oncely/oncely/examples/ledger").CombinedOutput()
	require.NoError(t, err, string(out))
	require.NotContains(t, string(out), "franz-go/pkg/kfake")
	require.Contains(t, string(out), "github.com/twmb/franz-go/pkg/kgo", "the listing is real")

}
