package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters/redis"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
)

// The replay page of a Redis consumer group lists a running Source that
// was delivered nothing lately as a live member, and the rewind is refused
// (409) naming it, the group left where it is; once the Source is closed
// the rewind goes through. Catches: a quiet Source on Redis before 7.2
// (absent from XINFO CONSUMERS, or idle there) that the console does not
// see.
func TestReplayRedisRunningSource(t *testing.T) {
	rawURL := envtest.Redis(t)
	br := openBroker(t, rawURL)
	source, name := names()
	opts, err := goredis.ParseURL(rawURL)
	require.NoError(t, err)
	client := goredis.NewClient(opts)
	t.Cleanup(func() {
		_ = client.Del(context.Background(), source, redis.RetryStream(source, name), redis.LiveKey(source, name)).Err()
		_ = client.Close()
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for i := range 2 {
		require.NoError(t, client.XAdd(ctx, &goredis.XAddArgs{Stream: source, Values: redis.EntryFields(&consumer.Message{ID: fmt.Sprintf("r-%d", i)})}).Err())
	}
	first, err := br.Source(ctx, source, name)
	require.NoError(t, err)
	for got := 0; got < 2; {
		ds, err := first.Receive(ctx, 2-got)
		require.NoError(t, err)
		for _, d := range ds {
			require.NoError(t, d.Ack(ctx))
		}
		got += len(ds)
	}
	require.NoError(t, first.Close(ctx))
	position := func() string {
		groups, err := client.XInfoGroups(ctx, source).Result()
		require.NoError(t, err)
		require.Len(t, groups, 1)
		return groups[0].LastDeliveredID
	}
	before := position()

	running, err := br.Source(ctx, source, name)
	require.NoError(t, err)
	host, err := os.Hostname()
	require.NoError(t, err)
	ours := fmt.Sprintf("%s-%d-", host, os.Getpid())
	f := newFixture(t, br, nil)
	body := f.page(consumerURL(source, name) + "replay?to=earliest")
	require.Contains(t, testid(t, body, "replay-members"), ours)
	resp := f.post(consumerURL(source, name)+"replay", url.Values{"to": {"earliest"}, "confirm": {replayConfirmWord}})
	require.Equal(t, http.StatusConflict, resp.StatusCode)
	require.Contains(t, readBody(t, resp), ours)
	require.Equal(t, before, position(), "the refused rewind moved nothing")

	require.NoError(t, running.Close(ctx))
	resp = f.post(consumerURL(source, name)+"replay", url.Values{"to": {"earliest"}, "confirm": {replayConfirmWord}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	require.Equal(t, "0-0", position())
}
