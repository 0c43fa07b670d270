package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/internal/envtest"
	"github.com/oncely/oncely/internal/kafkatest"
)

// watchedBroker records the options of each Redrive and signals its
// progress, so tests wait on events rather than time.
type watchedBroker struct {
	adapters.Broker
	mu       sync.Mutex
	opts     []adapters.RedriveOptions
	progress chan adapters.RedriveProgress
}

func watch(br adapters.Broker) *watchedBroker {
	return &watchedBroker{Broker: br, progress: make(chan adapters.RedriveProgress, 100_000)}
}

func (b *watchedBroker) Redrive(ctx context.Context, source, name string, opts adapters.RedriveOptions) (adapters.RedriveResult, error) {
	b.mu.Lock()
	b.opts = append(b.opts, opts)
	b.mu.Unlock()
	inner := opts.Progress
	opts.Progress = func(p adapters.RedriveProgress) {
		inner(p)
		b.progress <- p
	}
	return b.Broker.Redrive(ctx, source, name, opts)
}

func (b *watchedBroker) lastOpts() adapters.RedriveOptions {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.opts[len(b.opts)-1]
}

// claim writes idempotency claims of consumer name, as the middleware's
// committed transactions leave them.
func claim(t *testing.T, f *fixture, name string, ids ...string) {
	t.Helper()
	for _, id := range ids {
		_, err := f.db.Pool.Exec(t.Context(), "INSERT INTO "+pgx.Identifier{f.db.Schema, "processed_messages"}.Sanitize()+
			" (consumer, message_id) VALUES ($1, $2)", name, id)
		require.NoError(t, err)
	}
}

func deadIDs(t *testing.T, br adapters.Broker, source, name string) []string {
	t.Helper()
	dls, err := br.DeadLetters(t.Context(), source, name, 0)
	require.NoError(t, err)
	ids := []string{}
	for _, d := range dls {
		ids = append(ids, d.Message.ID)
	}
	return ids
}

func sourceDepth(t *testing.T, br adapters.Broker, source, name string) int64 {
	t.Helper()
	lines, err := br.Backlog(t.Context(), source, name)
	require.NoError(t, err)
	for _, l := range lines {
		if l.Source == source {
			return l.Lag
		}
	}
	return -1
}

// waitJob waits for the job's end and returns its state.
func waitJob(t *testing.T, f *fixture, id string) jobState {
	t.Helper()
	j := f.srv.job(id)
	require.NotNil(t, j)
	select {
	case <-j.done:
	case <-time.After(time.Minute):
		t.Fatalf("job %s did not end", id)
	}
	return j.State()
}

func jobOf(t *testing.T, resp *http.Response) string {
	t.Helper()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, readBody(t, resp))
	loc := resp.Header.Get("Location")
	require.True(t, strings.HasPrefix(loc, "/jobs/"), loc)
	return strings.TrimPrefix(loc, "/jobs/")
}

func TestActionsMemory(t *testing.T) { testActions(t, memBroker(t)) }

func TestActionsRabbitMQ(t *testing.T) {
	br, err := adapters.Open(t.Context(), envtest.RabbitMQ(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = br.Close() })
	testActions(t, br)
}

// testActions drives plan, redrive (filtered, at a rate, to completion),
// cancel and delete through the pages and forms, and checks the broker
// and the audit table after each.
func testActions(t *testing.T, inner adapters.Broker) {
	br := watch(inner)
	source, name := names()
	var letters []letter // cards and orders interleaved
	for i := range 10 {
		letters = append(letters, letter{id: fmt.Sprintf("c%d", i), body: []byte("card"), err: fmt.Sprintf("card %d declined", i)})
		if i < 6 {
			letters = append(letters, letter{id: fmt.Sprintf("o%d", i), body: fmt.Appendf(nil, `{"order":%d}`, i), err: fmt.Sprintf("order %d not found", i)})
		}
	}
	seed(t, br, source, name, letters, len(letters))
	// A page reads 4 dead letters only: the actions must still cover the
	// whole destination.
	f := newFixture(t, br, func(c *Config) { c.ScanLimit = 4; c.Consumers = []Consumer{{Source: source, Name: name}} })
	base := consumerURL(source, name)
	claim(t, f, name, "o1", "o4")
	claim(t, f, "someone-else", "o2")

	body := f.page(base)
	require.Contains(t, body, `data-testid="scan-truncated"`)

	// The plan: every "order" letter of the destination, o1 and o4 applied.
	body = f.page(base + "plan?text=order")
	require.Equal(t, []string{"6"}, testids(body, "plan-selected"))
	require.Equal(t, []string{"16"}, testids(body, "plan-seen"))
	require.Equal(t, []string{"2"}, testids(body, "plan-applied-count"))
	require.Equal(t, []string{"4"}, testids(body, "plan-not-applied-count"))
	_, applied, _ := strings.Cut(body, `data-testid="plan-applied-list"`)
	applied, _, _ = strings.Cut(applied, "</ul>")
	require.ElementsMatch(t, []string{"o1", "o4"}, testids(applied, "plan-id"))
	// The redrive form carries the filter and the plan's count; take its
	// CSRF token from the page, as a browser does.
	form, err := url.ParseQuery("")
	require.NoError(t, err)
	for _, m := range hiddenRE.FindAllStringSubmatch(formOf(body, "redrive-form"), -1) {
		form.Set(m[1], htmlUnescape(m[2]))
	}
	require.Equal(t, "order", form.Get("text"))
	require.Equal(t, "6", form.Get("limit"))
	require.NotEmpty(t, form.Get("csrf"))

	// Redrive them at 200/s, to completion.
	form.Set("rate", "200")
	id := jobOf(t, f.post(base+"redrive", form))
	st := waitJob(t, f, id)
	require.Equal(t, jobDone, st.Status, st.Error)
	require.Equal(t, 6, st.Redriven)
	require.Equal(t, 200.0, br.lastOpts().Rate)
	require.Equal(t, 6, br.lastOpts().Limit)
	last := adapters.RedriveProgress{}
	for len(br.progress) > 0 {
		p := <-br.progress
		require.GreaterOrEqual(t, p.Redriven, last.Redriven)
		last = p
	}
	require.Equal(t, 6, last.Redriven)
	require.Equal(t, 16, last.Total)
	require.ElementsMatch(t, []string{"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9"}, deadIDs(t, br, source, name))
	require.Equal(t, int64(6), sourceDepth(t, br, source, name))
	body = f.page("/jobs/" + id)
	require.Equal(t, []string{jobDone}, testids(body, "job-status"))
	require.Equal(t, []string{"6"}, testids(body, "job-redriven"))
	require.NotContains(t, body, `data-testid="job-cancel"`)
	resp, err := f.client.Get(f.ts.URL + "/jobs/" + id + "/progress")
	require.NoError(t, err)
	var progress jobState
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&progress))
	resp.Body.Close()
	require.Equal(t, jobState{Status: jobDone, Seen: st.Seen, Total: 16, Redriven: 6, Skipped: st.Skipped}, progress.withoutTime())
	body = f.page("/jobs")
	require.Equal(t, []string{id}, testids(body, "job-link"))

	// Cancel a slow one (2/s) after its first message: it stops between
	// two messages, and every letter is in exactly one place.
	code, planBody := f.get(base + "plan?text=card")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, []string{"10"}, testids(planBody, "plan-selected"))
	id = jobOf(t, f.post(base+"redrive", url.Values{"text": {"card"}, "limit": {"10"}, "rate": {"2"}}))
	for p := range br.progress {
		if p.Redriven >= 1 {
			break
		}
	}
	require.Equal(t, []string{jobRunning}, testids(f.page("/jobs/"+id), "job-status"))
	resp = f.post("/jobs/"+id+"/cancel", url.Values{})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	st = waitJob(t, f, id)
	require.Equal(t, jobCancelled, st.Status)
	require.Equal(t, "alice", st.CancelledBy)
	require.Less(t, st.Redriven, 10)
	left := deadIDs(t, br, source, name)
	require.Len(t, left, 10-st.Redriven, "a cancelled redrive lost or duplicated a message")
	require.Equal(t, int64(6+st.Redriven), sourceDepth(t, br, source, name))

	// Delete: the confirmation word is required; then the filter's letters go.
	resp = f.post(base+"delete", url.Values{"text": {"card"}, "limit": {"10"}, "confirm": {"yes"}})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Len(t, deadIDs(t, br, source, name), len(left))
	resp = f.post(base+"delete", url.Values{"id": {left[0]}, "limit": {"1"}, "confirm": {ConfirmWord}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, []string{"1"}, testids(readBody(t, resp), "deleted-count"))
	require.ElementsMatch(t, left[1:], deadIDs(t, br, source, name))

	// The audit table has every action, newest first, with who and counts.
	rows, err := f.srv.audit.latest(t.Context(), 10)
	require.NoError(t, err)
	var got []string
	for _, r := range rows {
		require.Equal(t, "alice", r.Actor)
		require.Equal(t, source, r.Source)
		require.Equal(t, name, r.Consumer)
		got = append(got, r.Action+" "+r.Outcome)
	}
	require.Equal(t, []string{"delete done", "redrive.end cancelled by alice", "redrive.cancel requested", "redrive.start started at 2/s",
		"redrive.end done", "redrive.start started at 200/s"}, got)
	require.Equal(t, map[string]int{"limit": 6}, rows[5].Counts)
	// Some "order" letters lie beyond the 4 a page reads; all 6 went.
	c := rows[4].Counts
	require.Equal(t, 6, c["redriven"])
	require.Equal(t, c["seen"], c["redriven"]+c["skipped"])
	require.Zero(t, c["duplicate_copies"])
	require.Equal(t, "text=order", rows[4].Selection)
	require.Equal(t, 1, rows[0].Counts["deleted"])
	require.Equal(t, st.Redriven, rows[1].Counts["redriven"])
	body = f.page("/audit")
	require.Len(t, testids(body, "audit-action"), 6)
	require.Equal(t, "alice", testids(body, "audit-actor")[0])
}

func (s jobState) withoutTime() jobState {
	s.Finished = time.Time{}
	return s
}

// SQS needs a body on every message (seeded letters have one) and is slow
// here: each read of the dead-letter queue ends with a 1 s long poll.
func TestActionsSQS(t *testing.T) {
	br, err := adapters.Open(t.Context(), "sqs://us-east-1?endpoint="+envtest.SQS(t)+"&visibility_timeout=5s&wait=1")
	require.NoError(t, err)
	t.Cleanup(func() { _ = br.Close() })
	testActions(t, br)
}

func TestActionsKafka(t *testing.T) {
	addrs := kafkatest.Brokers(t, kfake.NumBrokers(1), kfake.DefaultNumPartitions(1))
	br, err := adapters.Open(t.Context(), "kafka://"+strings.Join(addrs, ","))
	require.NoError(t, err)
	t.Cleanup(func() { _ = br.Close() })
	testActions(t, br)
}

// Close stops running redrives between two messages, records their end,
// and refuses new ones. The bug it catches: a shutdown that abandons a
// job without its end row, or loses a message mid-move.
func TestCloseStopsJobs(t *testing.T) {
	br := watch(memBroker(t))
	source, name := names()
	var ls []letter
	for i := range 5 {
		ls = append(ls, letter{id: fmt.Sprintf("m%d", i), err: "e"})
	}
	seed(t, br, source, name, ls, len(ls))
	f := newFixture(t, br, nil)
	base := consumerURL(source, name)
	id := jobOf(t, f.post(base+"redrive", url.Values{"limit": {"5"}, "rate": {"1"}}))
	for p := range br.progress {
		if p.Redriven >= 1 {
			break
		}
	}
	require.NoError(t, f.srv.Close(t.Context()))
	st := f.srv.job(id).State()
	require.Equal(t, jobCancelled, st.Status)
	require.Equal(t, "shutdown", st.CancelledBy)
	require.Len(t, deadIDs(t, br, source, name), 5-st.Redriven)
	require.Equal(t, int64(st.Redriven), sourceDepth(t, br, source, name))
	rows, err := f.srv.audit.latest(t.Context(), 1)
	require.NoError(t, err)
	require.Equal(t, actionRedriveEnd, rows[0].Action)
	require.Equal(t, "cancelled by shutdown", rows[0].Outcome)
	resp := f.post(base+"redrive", url.Values{"limit": {"5"}, "rate": {"1"}})
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
}
