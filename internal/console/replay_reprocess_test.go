package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
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

// reprocessFixture is a Kafka topic of two partitions of 4 records each
// (IDs "<topic>-p<partition>-<i>"), the group committed at 4 on both, and
// the console over it; claims of the group for every record, and one of
// another consumer.
type reprocessFixture struct {
	*fixture
	topic, group string
	adm          *kadm.Client
	claims       string
}

func newReprocessFixture(t *testing.T, readOnly bool) reprocessFixture {
	addrs := kafkatest.Brokers(t, kfake.NumBrokers(1), kfake.DefaultNumPartitions(1))
	topic, group := names()
	kafkatest.CreateTopic(t, addrs, topic, 2)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	ctx := context.Background()
	offsets := kadm.Offsets{}
	var ids []string
	for p := range int32(2) {
		for i := range 4 {
			id := fmt.Sprintf("%s-p%d-%d", topic, p, i)
			ids = append(ids, id)
			require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte("{}"),
				Headers: []kgo.RecordHeader{{Key: consumer.HeaderMessageID, Value: []byte(id)}}}).FirstErr())
		}
		offsets.Add(kadm.Offset{Topic: topic, Partition: p, At: 4, LeaderEpoch: -1})
	}
	adm := kadm.NewClient(cl)
	require.NoError(t, adm.CommitAllOffsets(ctx, group, offsets))
	br, err := adapters.Open(ctx, "kafka://"+strings.Join(addrs, ","))
	require.NoError(t, err)
	t.Cleanup(func() { _ = br.Close() })
	f := newFixture(t, br, func(c *Config) { c.ReadOnly = readOnly })
	claims := pgx.Identifier{f.db.Schema, "processed_messages"}.Sanitize()
	for _, c := range append(ids, "another:"+topic+"-p0-0") {
		name, id := group, c
		if other, ok := strings.CutPrefix(c, "another:"); ok {
			name, id = "another", other
		}
		_, err := f.db.Pool.Exec(ctx, "INSERT INTO "+claims+" (consumer, message_id) VALUES ($1, $2)", name, id)
		require.NoError(t, err)
	}
	return reprocessFixture{fixture: f, topic: topic, group: group, adm: adm, claims: claims}
}

// claimed lists the claims left, "consumer/id", in order.
func (f reprocessFixture) claimed(t *testing.T) []string {
	t.Helper()
	rows, err := f.db.Pool.Query(t.Context(), "SELECT consumer || '/' || message_id FROM "+f.claims+" ORDER BY 1")
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

// The replay page of a console with write access offers "rewind and forget
// the claims of the range"; with "reprocess" typed it deletes the claims of
// exactly the covered records (offsets 2 and 3 of partition 0, 3 of
// partition 1), no other and no other consumer's, with an audit row in the
// same transaction, commits the offsets and records that in a second row.
// Refused: without the CSRF token, and with the rewind's word typed.
// Catches: a console reprocess that deletes more or fewer claims, or none,
// or writes no audit row.
func TestReplayReprocessFromConsole(t *testing.T) {
	f := newReprocessFixture(t, false)
	base := consumerURL(f.topic, f.group)
	body := f.page(base + "replay?to=" + url.QueryEscape("0:2,1:3"))
	require.Contains(t, body, `data-testid="replay-reprocess-form"`)
	require.Equal(t, "3", testid(t, body, "replay-claimed"))
	all := f.claimed(t)

	form := func() url.Values {
		return url.Values{"to": {"0:2,1:3"}, "reprocess": {"1"}, "confirm": {reprocessConfirmWord}}
	}
	noCSRF := form()
	noCSRF.Set("csrf", "")
	require.Equal(t, http.StatusForbidden, f.post(base+"replay", noCSRF).StatusCode)
	wrongWord := form()
	wrongWord.Set("confirm", replayConfirmWord)
	require.Equal(t, http.StatusBadRequest, f.post(base+"replay", wrongWord).StatusCode)
	require.Equal(t, all, f.claimed(t), "a refused reprocess deleted claims")

	resp := f.post(base+"replay", form())
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	var want []string
	for _, c := range all {
		if !strings.HasSuffix(c, "-p0-2") && !strings.HasSuffix(c, "-p0-3") && !strings.HasSuffix(c, "-p1-3") || strings.HasPrefix(c, "another/") {
			want = append(want, c)
		}
	}
	require.Len(t, want, len(all)-3)
	require.Equal(t, want, f.claimed(t))
	fetched, err := f.adm.FetchOffsets(t.Context(), f.group)
	require.NoError(t, err)
	at := map[int32]int64{}
	fetched.Each(func(o kadm.OffsetResponse) { at[o.Partition] = o.At })
	require.Equal(t, map[int32]int64{0: 2, 1: 3}, at)

	row, err := strconv.ParseInt(strings.TrimPrefix(resp.Header.Get("Location"), "/audit/"), 10, 64)
	require.NoError(t, err)
	e, ok, err := f.srv.audit.entry(t.Context(), row)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []string{actionReprocess, f.topic, f.group, "to 0:2,1:3", "claims deleted"}, []string{e.Action, e.Source, e.Consumer, e.Selection, e.Outcome})
	require.Equal(t, map[string]int{"covered": 3, "claims_deleted": 3}, e.Counts)
	require.ElementsMatch(t, []string{f.topic + "-p0-2", f.topic + "-p0-3", f.topic + "-p1-3"}, e.MessageIDs)
	end, ok, err := f.srv.audit.entry(t.Context(), row+1)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []string{actionReprocess, "done: offsets committed"}, []string{end.Action, end.Outcome})
}

// A read-only console offers no reprocess and refuses its POST. Catches:
// a read-only console that deletes claims.
func TestReplayReprocessReadOnly(t *testing.T) {
	f := newReprocessFixture(t, true)
	base := consumerURL(f.topic, f.group)
	body := f.page(base + "replay")
	require.NotContains(t, body, `data-testid="replay-reprocess-form"`)
	all := f.claimed(t)
	resp := f.post(base+"replay", url.Values{"to": {"earliest"}, "reprocess": {"1"}, "confirm": {reprocessConfirmWord}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Equal(t, all, f.claimed(t))
}
