package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/kafkatest"
)

// hostileName is a consumer name that breaks a page that does not escape
// it.
const hostileName = `ledger<b id="x">"'&`

// The replay page of a Kafka consumer shows, per partition, the records a
// rewind to earliest covers and how many of them have a claim of the
// consumer, escaping the consumer's name. Catches: claims counted over the
// wrong partition or consumer, or a name written into the page raw.
func TestReplayPagePerPartition(t *testing.T) {
	addrs := kafkatest.Brokers(t, kfake.NumBrokers(1), kfake.DefaultNumPartitions(1))
	topic, _ := names()
	group := hostileName + topic
	kafkatest.CreateTopic(t, addrs, topic, 2)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	perPartition := map[int32]int{0: 3, 1: 2}
	var recs []*kgo.Record
	for p, n := range perPartition {
		for i := range n {
			id := fmt.Sprintf("%s-p%d-%d", topic, p, i)
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte("{}"),
				Headers: []kgo.RecordHeader{{Key: consumer.HeaderMessageID, Value: []byte(id)}}})
		}
	}
	ctx := context.Background()
	require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
	adm := kadm.NewClient(cl)
	offsets := kadm.Offsets{}
	for p, n := range perPartition {
		offsets.Add(kadm.Offset{Topic: topic, Partition: p, At: int64(n), LeaderEpoch: -1})
	}
	require.NoError(t, adm.CommitAllOffsets(ctx, group, offsets))

	br, err := adapters.Open(ctx, "kafka://"+strings.Join(addrs, ","))
	require.NoError(t, err)
	t.Cleanup(func() { _ = br.Close() })
	f := newFixture(t, br, nil)
	claims := pgx.Identifier{f.db.Schema, "processed_messages"}.Sanitize()
	for _, c := range []struct{ consumer, id string }{
		{group, topic + "-p0-0"}, {group, topic + "-p0-2"}, {group, topic + "-p1-1"},
		{"another", topic + "-p1-0"}, // another consumer's claim does not count
	} {
		_, err := f.db.Pool.Exec(ctx, "INSERT INTO "+claims+" (consumer, message_id) VALUES ($1, $2)", c.consumer, c.id)
		require.NoError(t, err)
	}

	groups := f.page(consumerURL(topic, group))
	require.Contains(t, groups, `data-testid="replay-link"`)
	body := f.page(consumerURL(topic, group) + "replay?to=earliest")
	require.NotContains(t, body, `<b id="x">`)
	require.Contains(t, body, `ledger&lt;b id=&#34;x&#34;&gt;&#34;&#39;&amp;`)
	require.Equal(t, "5", testid(t, body, "replay-covered"))
	require.Equal(t, "3", testid(t, body, "replay-claimed"))
	rows := regexp.MustCompile(`(?s)data-partition="(\d+)">.*?data-testid="replay-partition-covered">(\d+)<.*?data-testid="replay-partition-claimed">(\d+)<`).FindAllStringSubmatch(body, -1)
	got := map[string]string{}
	for _, m := range rows {
		got[m[1]] = m[2] + " covered, " + m[3] + " claimed"
	}
	require.Equal(t, map[string]string{"0": "3 covered, 2 claimed", "1": "2 covered, 1 claimed"}, got)

	code, bad := f.get(consumerURL(topic, group) + "replay?to=" + url.QueryEscape("not a target"))
	require.Equal(t, 400, code, bad)

	// The rewind: refused without the typed confirmation, then committed
	// and recorded in the audit table.
	require.Contains(t, body, `data-testid="replay-rewind-form"`)
	committed := func() map[int32]int64 {
		fetched, err := adm.FetchOffsets(ctx, group)
		require.NoError(t, err)
		out := map[int32]int64{}
		fetched.Each(func(o kadm.OffsetResponse) { out[o.Partition] = o.At })
		return out
	}
	resp := f.post(consumerURL(topic, group)+"replay", url.Values{"to": {"earliest"}, "confirm": {"no"}})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Equal(t, map[int32]int64{0: 3, 1: 2}, committed())
	resp = f.post(consumerURL(topic, group)+"replay", url.Values{"to": {"earliest"}, "confirm": {replayConfirmWord}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	require.Equal(t, map[int32]int64{0: 0, 1: 0}, committed())
	row, err := strconv.ParseInt(strings.TrimPrefix(resp.Header.Get("Location"), "/audit/"), 10, 64)
	require.NoError(t, err)
	e, ok, err := f.srv.audit.entry(ctx, row)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []string{actionReplay, topic, group, "to earliest", "done"}, []string{e.Action, e.Source, e.Consumer, e.Selection, e.Outcome})
	require.Equal(t, 5, e.Counts["covered"])
}

// A read-only console shows the replay plan without the rewind form and
// refuses the rewind's POST. Catches: a read-only console that rewinds.
func TestReplayReadOnly(t *testing.T) {
	addrs := kafkatest.Brokers(t, kfake.NumBrokers(1), kfake.DefaultNumPartitions(1))
	topic, group := names()
	kafkatest.CreateTopic(t, addrs, topic, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	ctx := context.Background()
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("{}")}).FirstErr())
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1, LeaderEpoch: -1})
	require.NoError(t, kadm.NewClient(cl).CommitAllOffsets(ctx, group, offsets))
	br, err := adapters.Open(ctx, "kafka://"+strings.Join(addrs, ","))
	require.NoError(t, err)
	t.Cleanup(func() { _ = br.Close() })
	f := newFixture(t, br, func(c *Config) { c.ReadOnly = true })
	body := f.page(consumerURL(topic, group) + "replay")
	require.Equal(t, "1", testid(t, body, "replay-covered"))
	require.NotContains(t, body, `data-testid="replay-rewind-form"`)
	require.Contains(t, body, `data-testid="read-only-note"`)
	resp := f.post(consumerURL(topic, group)+"replay", url.Values{"to": {"earliest"}, "confirm": {replayConfirmWord}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
}

// On a queue broker the replay page says replay does not apply and points
// to the dead-letter redrive, escaping the consumer's name. Catches: a page
// that offers a rewind a queue cannot do.
func TestReplayPageQueueBroker(t *testing.T) {
	f := newFixture(t, memBroker(t), nil)
	source, name := names()
	body := f.page(consumerURL(source, hostileName+name) + "replay")
	require.Contains(t, body, `data-testid="replay-not-applicable"`)
	require.Contains(t, body, "Replay does not apply to memory: it is a queue")
	require.Contains(t, htmlUnescape(body), `href="`+consumerURL(source, hostileName+name)+`plan"`)
	require.NotContains(t, body, `data-testid="replay-table"`)
	require.NotContains(t, body, `<b id="x">`)
}

// testid returns the text of the element with data-testid id.
func testid(t *testing.T, body, id string) string {
	t.Helper()
	m := regexp.MustCompile(`data-testid="` + id + `">([^<]*)<`).FindStringSubmatch(body)
	require.NotNil(t, m, "no %s in the page", id)
	return m[1]
}
