package sqs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/retry"
	pgstore "github.com/oncely/oncely/store/postgres"
)

func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// newSource opens a Source on the emulator, closing it when the test ends.
func newSource(t testing.TB, endpoint string, cfg Config) *Source {
	t.Helper()
	cfg.Endpoint = endpoint
	if cfg.Consumer == "" {
		cfg.Consumer = "ledger"
	}
	if cfg.WaitTimeSeconds == 0 {
		cfg.WaitTimeSeconds = 1
	}
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	cfg.CreateQueues = true
	src, err := New(testCtx(t, 30*time.Second), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = src.Close(context.Background()) })
	return src
}

func messages(prefix string, n int, key func(i int) string) []*consumer.Message {
	out := make([]*consumer.Message, n)
	for i := range out {
		out[i] = &consumer.Message{ID: fmt.Sprintf("%s-%04d", prefix, i), Key: key(i), Body: []byte(strconv.Itoa(i)), Partition: -1, Offset: -1}
	}
	return out
}

// recorder is a consumer.Observer counting outcomes.
type recorder struct {
	mu       sync.Mutex
	outcomes map[consumer.Outcome]int
}

func (r *recorder) Settled(_ context.Context, ev consumer.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.outcomes == nil {
		r.outcomes = make(map[consumer.Outcome]int)
	}
	r.outcomes[ev.Outcome]++
}
func (r *recorder) BreakerChanged(bool) {}
func (r *recorder) count(o consumer.Outcome) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.outcomes[o]
}

// runConsumer runs a Consumer over src until the returned stop is called (or
// the test ends).
func runConsumer(t testing.TB, src consumer.Source, h consumer.Handler, cfg consumer.Config, mws ...consumer.Middleware) (stop func()) {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "ledger"
	}
	cfg.Logger = quietLogger()
	_, stop = adaptertest.RunConsumer(t, src, h, cfg, mws...)
	return stop
}

// TestSlowHandlerRenewal consumes 1,000 messages with a handler that takes
// longer than the visibility timeout: renewals keep every message invisible
// while its handler runs, so each is handled exactly once (no idempotency
// store involved) and none is left behind.
func TestSlowHandlerRenewal(t *testing.T) {
	endpoint, client := emulator(t)
	// The handler outlasts the visibility timeout by a second. On this
	// loaded machine (two cores shared by several test runs, the race
	// detector) extensions were measured to need up to ~1.6s to be
	// confirmed, so the timeout is 5s, which gives them 2s (renewAfter).
	const n, visibility, work = 1000, 5 * time.Second, 6 * time.Second
	queue := uniqueQueue("slow")
	src := newSource(t, endpoint, Config{QueueName: queue, VisibilityTimeout: visibility, Receivers: 4})
	publish(t, client, src.QueueURL(), messages("slow", n, func(int) string { return "" })...)

	var mu sync.Mutex
	handled := make(map[string]int)
	var cancelled atomic.Int32
	rec := &recorder{}
	stop := runConsumer(t, src, consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
		select {
		case <-time.After(work):
		case <-ctx.Done():
			cancelled.Add(1)
			return ctx.Err()
		}
		mu.Lock()
		handled[m.ID]++
		mu.Unlock()
		return nil
	}), consumer.Config{Concurrency: 500, MaxInFlight: 500, Ordering: consumer.Unordered, Observer: rec})
	adaptertest.WaitUntil(t, 60*time.Second, "every message to be acked", func() bool { return rec.count(consumer.OutcomeProcessed) >= n })
	stop()

	// A lease is given up when an extension fails or is confirmed after the
	// window it extends may have ended (the adapter cannot tell whether SQS
	// applied it in time, so it assumes not). On this machine (two cores
	// under a load average above 20, the race detector) that happened to up
	// to ~5 % of deliveries in a full package run, none when run alone; the
	// runtime reports them abandoned and the message is handled once more,
	// so a duplicate must be explained by a lost lease. Without renewals
	// every delivery would lose its lease.
	abandoned := rec.count(consumer.OutcomeAbandoned)
	t.Logf("%d of %d deliveries lost their lease (%d handlers cancelled)", abandoned, n, cancelled.Load())
	require.LessOrEqual(t, abandoned, n/10, "renewals keep leases")
	mu.Lock()
	require.Len(t, handled, n, "every message handled")
	again := 0
	for _, c := range handled {
		again += c - 1
	}
	mu.Unlock()
	require.LessOrEqual(t, again, abandoned, "a message runs twice only after its lease was lost")

	// Nothing comes back after a visibility timeout: every delete landed.
	after := newSource(t, endpoint, Config{QueueName: queue, VisibilityTimeout: visibility})
	adaptertest.AssertQuiet(t, after, visibility+time.Second)
	bl, err := after.Backlog(testCtx(t, 10*time.Second))
	require.NoError(t, err)
	require.Equal(t, []consumer.Backlog{{Source: queue, Partition: -1, Lag: 0, DeadLetters: 0}}, bl)
}

// failing is an http.RoundTripper failing the SQS actions in fail.
type failing struct {
	fail  map[string]bool
	calls atomic.Int32
}

func (f *failing) RoundTrip(r *http.Request) (*http.Response, error) {
	target := r.Header.Get("X-Amz-Target")
	action := target[strings.LastIndexByte(target, '.')+1:]
	if f.fail[action] {
		f.calls.Add(1)
		return nil, fmt.Errorf("injected failure of %s", action)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestRetryByVisibility: a retry delay is honoured (rounded up to whole
// seconds), the attempt number comes from ApproximateReceiveCount on any
// Source, and the failure context comes back only on the Source that retried.
func TestRetryByVisibility(t *testing.T) {
	endpoint, client := emulator(t)
	queue := uniqueQueue("retry")
	a := newSource(t, endpoint, Config{QueueName: queue, VisibilityTimeout: 5 * time.Second})
	publish(t, client, a.QueueURL(), &consumer.Message{ID: "r-1", Key: "k", Body: []byte("b")})
	ctx := testCtx(t, 60*time.Second)

	d := adaptertest.ReceiveN(t, a, 1, 10*time.Second)[0]
	require.Equal(t, 1, d.Message().Attempt)
	const delay = 1200 * time.Millisecond
	retried := time.Now()
	require.NoError(t, d.Retry(ctx, delay, map[string]string{consumer.HeaderAttempt: "2", "x-context": "in memory"}))
	require.ErrorIs(t, d.Retry(ctx, delay, nil), consumer.ErrAlreadySettled)
	require.NoError(t, a.Close(ctx))

	// Another Source (another process): attempt 2 from SQS's receive
	// count, but no failure context.
	b := newSource(t, endpoint, Config{QueueName: queue, VisibilityTimeout: 5 * time.Second})
	d = adaptertest.ReceiveN(t, b, 1, 10*time.Second)[0]
	gap := time.Since(retried)
	require.GreaterOrEqual(t, gap, 2*time.Second, "1.2s rounds up to 2s of visibility")
	m := d.Message()
	require.Equal(t, "r-1", m.ID)
	require.Equal(t, 2, m.Attempt)
	require.Empty(t, m.Header("x-context"), "the failure context stays with the Source that retried")

	// The same Source receives it again: its failure context is back.
	require.NoError(t, d.Retry(ctx, 0, map[string]string{consumer.HeaderAttempt: "3", "x-context": "kept"}))
	d = adaptertest.ReceiveN(t, b, 1, 10*time.Second)[0]
	require.Equal(t, 3, d.Message().Attempt)
	require.Equal(t, "kept", d.Message().Header("x-context"))
	require.Equal(t, "k", d.Message().Key)
	require.NoError(t, d.Ack(ctx))
}

// TestDeadLetterContext: a message with ten attributes is dead-lettered with
// its body and attributes, the failure context packed into one attribute, so
// the copy stays within SQS's ten; the original is deleted.
func TestDeadLetterContext(t *testing.T) {
	endpoint, client := emulator(t)
	queue := uniqueQueue("dlqctx")
	src := newSource(t, endpoint, Config{QueueName: queue})
	orig := &consumer.Message{ID: "d-1", Body: []byte(`{"amount":1}`), Headers: map[string]string{}}
	for i := range 9 { // + message-id = 10 attributes
		orig.Headers[fmt.Sprintf("h%d", i)] = fmt.Sprintf("v%d", i)
	}
	publish(t, client, src.QueueURL(), orig)
	ctx := testCtx(t, 30*time.Second)

	d := adaptertest.ReceiveN(t, src, 1, 10*time.Second)[0]
	m := d.Message()
	h := consumer.FailureHeaders(m, consumer.Failure{Consumer: "ledger", Err: consumer.Permanent(errors.New("bad amount")), Reason: consumer.ReasonPermanent, NextAttempt: m.Attempt})
	require.NoError(t, d.DeadLetter(ctx, h))
	// Read the depths before receiving from the DLQ: local-aws-sqs counts
	// in-flight messages in ApproximateNumberOfMessages too (real SQS counts
	// only visible ones), so Backlog would count a received DLQ message twice.
	bl, err := src.Backlog(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(0), bl[0].Lag, "the original is deleted")
	require.Equal(t, int64(1), bl[0].DeadLetters)

	out, err := client.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{QueueUrl: aws.String(src.DeadLetterQueueURL()), MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}})
	require.NoError(t, err)
	require.Len(t, out.Messages, 1)
	dl := out.Messages[0]
	require.LessOrEqual(t, len(dl.MessageAttributes), maxAttributes)
	require.Contains(t, dl.MessageAttributes, FailureAttribute)
	require.Equal(t, `{"amount":1}`, aws.ToString(dl.Body))
	got := Headers(dl.MessageAttributes)
	require.Equal(t, "d-1", got[consumer.HeaderMessageID])
	require.Equal(t, consumer.ReasonPermanent, got[consumer.HeaderDeadLetterReason])
	require.Equal(t, "permanent: bad amount", got[consumer.HeaderError])
	require.Equal(t, queue, got[consumer.HeaderOriginalSource])
	require.Equal(t, "1", got[consumer.HeaderAttempt])
	for k, v := range orig.Headers {
		require.Equal(t, v, got[k], k)
	}

}

// TestDeadLetterSendFails: when the dead-letter send fails, the original is
// not deleted: it comes back and is dead-lettered once the send works.
func TestDeadLetterSendFails(t *testing.T) {
	endpoint, client := emulator(t)
	queue := uniqueQueue("dlqfail")
	broken := &failing{fail: map[string]bool{"SendMessage": true}}
	a := newSource(t, endpoint, Config{QueueName: queue, Client: newTestClient(endpoint, broken)})
	publish(t, client, a.QueueURL(), &consumer.Message{ID: "f-1", Body: []byte("keep me")})
	ctx := testCtx(t, 30*time.Second)

	d := adaptertest.ReceiveN(t, a, 1, 10*time.Second)[0]
	h := consumer.FailureHeaders(d.Message(), consumer.Failure{Consumer: "ledger", Err: errors.New("boom"), Reason: consumer.ReasonExhausted, NextAttempt: 1})
	require.ErrorContains(t, d.DeadLetter(ctx, h), "injected failure of SendMessage")
	require.GreaterOrEqual(t, broken.calls.Load(), int32(1), "the SDK's retryer tries more than once")
	require.NoError(t, a.Close(ctx)) // releases the unsettled original

	b := newSource(t, endpoint, Config{QueueName: queue})
	require.Empty(t, readQueue(t, client, b.DeadLetterQueueURL(), 0, 0), "nothing reached the DLQ")
	d = adaptertest.ReceiveN(t, b, 1, 10*time.Second)[0]
	require.Equal(t, "f-1", d.Message().ID)
	require.Equal(t, 2, d.Message().Attempt, "the original came back")
	require.NoError(t, d.DeadLetter(ctx, h))
	dl := readQueue(t, client, b.DeadLetterQueueURL(), 1, 5*time.Second)
	require.Len(t, dl, 1)
	require.Equal(t, "keep me", string(dl[0].Body))
	adaptertest.AssertQuiet(t, b, time.Second)
}

// TestLeaseLost: a failed visibility extension closes Lost; so does reaching
// MaxExtension, at the end of the last visibility window.
func TestLeaseLost(t *testing.T) {
	endpoint, client := emulator(t)
	ctx := testCtx(t, 30*time.Second)

	t.Run("ExtensionFails", func(t *testing.T) {
		queue := uniqueQueue("lost")
		broken := &failing{fail: map[string]bool{"ChangeMessageVisibility": true, "ChangeMessageVisibilityBatch": true}}
		src := newSource(t, endpoint, Config{QueueName: queue, VisibilityTimeout: time.Second, Client: newTestClient(endpoint, broken)})
		publish(t, client, src.QueueURL(), &consumer.Message{ID: "l-1", Body: []byte("b")})
		d := adaptertest.ReceiveN(t, src, 1, 10*time.Second)[0]
		select {
		case <-d.(consumer.Leased).Lost():
		case <-time.After(5 * time.Second):
			t.Fatal("Lost not closed after the extension failed")
		}
		require.GreaterOrEqual(t, broken.calls.Load(), int32(1))
	})

	t.Run("MaxExtension", func(t *testing.T) {
		queue := uniqueQueue("cap")
		const visibility, maxExt = 3 * time.Second, 7 * time.Second
		src := newSource(t, endpoint, Config{QueueName: queue, VisibilityTimeout: visibility, MaxExtension: maxExt})
		publish(t, client, src.QueueURL(), &consumer.Message{ID: "c-1", Body: []byte("b")})
		start := time.Now()
		d := adaptertest.ReceiveN(t, src, 1, 10*time.Second)[0]
		other := newSource(t, endpoint, Config{QueueName: queue, VisibilityTimeout: visibility})
		// Renewals keep it invisible well past one visibility timeout.
		adaptertest.AssertQuiet(t, other, visibility+time.Second)
		select {
		case <-d.(consumer.Leased).Lost():
			require.GreaterOrEqual(t, time.Since(start), maxExt-visibility)
		case <-time.After(15 * time.Second):
			t.Fatal("Lost not closed after MaxExtension")
		}
		got := adaptertest.ReceiveN(t, other, 1, 10*time.Second)
		require.Equal(t, "c-1", got[0].Message().ID)
		require.NoError(t, got[0].Ack(ctx))
	})
}

// TestKilledConsumer: a consumer dies mid-batch (after committing some
// effects, with some of those deletes not sent, and others not started). The
// unacked messages reappear after the visibility timeout and, with the
// Postgres idempotency store shared by both consumers, every effect is
// applied exactly once.
func TestKilledConsumer(t *testing.T) {
	endpoint, client := emulator(t)
	db := pgtest.New(t)
	ctx := testCtx(t, 90*time.Second)
	_, err := db.Pool.Exec(ctx, `CREATE TABLE effects (id text NOT NULL)`)
	require.NoError(t, err)
	store, err := pgstore.New(db.Pool, pgstore.Config{Schema: db.Schema, Logger: quietLogger()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close(context.Background()) })
	handler := pgstore.HandlerFunc(func(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
		_, err := tx.Exec(ctx, `INSERT INTO effects (id) VALUES ($1)`, m.ID)
		return err
	})
	idem := middleware.Idempotency(store)

	const n, batch, committed, acked = 200, 50, 20, 10
	queue := uniqueQueue("kill")
	const visibility = 2 * time.Second
	a, err := New(ctx, Config{QueueName: queue, CreateQueues: true, Consumer: "ledger", Endpoint: endpoint, VisibilityTimeout: visibility, WaitTimeSeconds: 1, Logger: quietLogger()})
	require.NoError(t, err)
	publish(t, client, a.QueueURL(), messages("kill", n, func(int) string { return "" })...)

	receivedAt := time.Now() // the batch's visibility starts after this
	ds := adaptertest.ReceiveN(t, a, batch, 10*time.Second)
	chain := consumer.Chain(handler, idem)
	for i, d := range ds[:committed] {
		hctx := consumer.WithAttemptState(consumer.WithName(ctx, "ledger"))
		require.NoError(t, chain.Handle(hctx, d.Message()))
		if i < acked {
			require.NoError(t, d.Ack(ctx))
		}
	}
	a.kill() // no deletes flushed, nothing released, renewals stopped

	rec := &recorder{}
	var mu sync.Mutex
	seen := make(map[string]int)
	b := newSource(t, endpoint, Config{QueueName: queue, VisibilityTimeout: visibility})
	var firstRedelivery atomic.Int64
	stop := runConsumer(t, b, consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
		mu.Lock()
		seen[m.ID]++
		mu.Unlock()
		if m.Attempt > 1 {
			firstRedelivery.CompareAndSwap(0, int64(time.Since(receivedAt)))
		}
		return handler.Handle(ctx, m)
	}), consumer.Config{Concurrency: 16, Observer: rec}, idem)
	adaptertest.WaitUntil(t, 60*time.Second, "every unacked message", func() bool {
		return rec.count(consumer.OutcomeProcessed)+rec.count(consumer.OutcomeDuplicate) >= n-acked
	})
	stop()

	require.Equal(t, committed-acked, rec.count(consumer.OutcomeDuplicate), "committed but unacked messages are duplicates")
	require.Equal(t, n-committed, rec.count(consumer.OutcomeProcessed))
	require.GreaterOrEqual(t, time.Duration(firstRedelivery.Load()), visibility, "unacked messages reappear only after the visibility timeout")
	rows, err := db.Pool.Query(ctx, `SELECT id, count(*) FROM effects GROUP BY id`)
	require.NoError(t, err)
	counts := map[string]int64{}
	for rows.Next() {
		var id string
		var c int64
		require.NoError(t, rows.Scan(&id, &c))
		counts[id] = c
	}
	require.NoError(t, rows.Err())
	require.Len(t, counts, n)
	for id, c := range counts {
		require.Equal(t, int64(1), c, "effect of %s applied %d times", id, c)
	}
	mu.Lock()
	for _, d := range ds[:acked] {
		require.Zero(t, seen[d.Message().ID], "acked %s came back", d.Message().ID)
	}
	mu.Unlock()
}

// TestFIFOGroupOrder: on a FIFO queue each MessageGroupId is one lane, so a
// group's messages are handled in order while groups run in parallel; a
// dead-lettered message goes to the FIFO dead-letter queue in its group.
//
// Emulator difference: local-aws-sqs 2.0.2 does not hold a group back while
// one of its messages is in flight (real SQS does), so concurrent receive
// calls could split a group between them in either order. The test uses one
// receiver; on real SQS any number of receivers keeps group order.
func TestFIFOGroupOrder(t *testing.T) {
	endpoint, client := emulator(t)
	const groups, perGroup = 5, 40
	queue := uniqueQueue("fifo") + ".fifo"
	src := newSource(t, endpoint, Config{QueueName: queue, Receivers: 1})
	require.True(t, strings.HasSuffix(src.DeadLetterQueueURL(), "-ledger-dlq.fifo"))
	msgs := messages("fifo", groups*perGroup, func(i int) string { return fmt.Sprintf("g%d", i%groups) })
	for i, m := range msgs {
		m.Body = []byte(strconv.Itoa(i / groups))
	}
	poison := &consumer.Message{ID: "poison", Key: "gp", Body: []byte("-1")}
	publish(t, client, src.QueueURL(), append(msgs, poison)...)

	var mu sync.Mutex
	order := make(map[string][]int)
	running, most := 0, 0
	rec := &recorder{}
	stop := runConsumer(t, src, consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		if m.ID == poison.ID {
			return consumer.Permanent(errors.New("poison"))
		}
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
		seq, _ := strconv.Atoi(string(m.Body))
		mu.Lock()
		running--
		order[m.Key] = append(order[m.Key], seq)
		mu.Unlock()
		return nil
	}), consumer.Config{Concurrency: 8, Observer: rec})
	adaptertest.WaitUntil(t, 60*time.Second, "every message", func() bool {
		return rec.count(consumer.OutcomeProcessed) >= groups*perGroup && rec.count(consumer.OutcomeDeadLettered) == 1
	})
	stop()

	mu.Lock()
	defer mu.Unlock()
	want := make([]int, perGroup)
	for i := range want {
		want[i] = i
	}
	for g := range groups {
		require.True(t, slices.Equal(want, order[fmt.Sprintf("g%d", g)]), "group g%d handled in order %v", g, order[fmt.Sprintf("g%d", g)])
	}
	require.Greater(t, most, 1, "groups ran in parallel")
	dl := readQueue(t, client, src.DeadLetterQueueURL(), 1, 5*time.Second)
	require.Len(t, dl, 1)
	require.Equal(t, "poison", dl[0].ID)
	require.Equal(t, consumer.ReasonPermanent, dl[0].Header(consumer.HeaderDeadLetterReason))
}

// TestRedrivePolicyChecked: a source queue whose RedrivePolicy would move
// messages before the consumer's last attempt is refused at start-up.
func TestRedrivePolicyChecked(t *testing.T) {
	endpoint, client := emulator(t)
	ctx := testCtx(t, 30*time.Second)
	native := uniqueQueue("native-dlq")
	created, err := client.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String(native)})
	require.NoError(t, err)
	attrs, err := client.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{QueueUrl: created.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	require.NoError(t, err)
	queue := uniqueQueue("redrive")
	_, err = client.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String(queue), Attributes: map[string]string{
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"5"}`, attrs.Attributes["QueueArn"]),
	}})
	require.NoError(t, err)

	cfg := Config{QueueName: queue, Consumer: "ledger", Endpoint: endpoint, CreateQueues: true, Logger: quietLogger()}
	_, err = New(ctx, cfg) // MaxAttempts defaults to 5
	require.ErrorContains(t, err, "after 5 receives")
	require.ErrorContains(t, err, "set MaxAttempts below 5")
	cfg.MaxAttempts = 4
	src, err := New(ctx, cfg)
	require.NoError(t, err)
	require.NoError(t, src.Close(ctx))
}

// TestRetryPolicyOnSQS runs the runtime's retry through the adapter: delays
// (whole seconds on SQS) are honoured and the last attempt is dead-lettered
// with the full context.
func TestRetryPolicyOnSQS(t *testing.T) {
	endpoint, client := emulator(t)
	queue := uniqueQueue("policy")
	src := newSource(t, endpoint, Config{QueueName: queue, MaxAttempts: 3})
	publish(t, client, src.QueueURL(), &consumer.Message{ID: "p-1", Body: []byte("b")})
	var mu sync.Mutex
	var starts []time.Time
	var attempts []int
	stop := runConsumer(t, src, consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		mu.Lock()
		starts = append(starts, time.Now())
		attempts = append(attempts, m.Attempt)
		mu.Unlock()
		return errors.New("still failing")
	}), consumer.Config{Retry: retry.Policy{MaxAttempts: 3, InitialInterval: time.Second, Multiplier: 2, MaxInterval: 2 * time.Second, Jitter: retry.NoJitter}})
	dl := readQueue(t, client, src.DeadLetterQueueURL(), 1, 20*time.Second)
	stop()
	require.Len(t, dl, 1)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []int{1, 2, 3}, attempts)
	require.GreaterOrEqual(t, starts[1].Sub(starts[0]), time.Second)
	require.GreaterOrEqual(t, starts[2].Sub(starts[1]), 2*time.Second)
	require.Equal(t, consumer.ReasonExhausted, dl[0].Header(consumer.HeaderDeadLetterReason))
	require.Equal(t, "3", dl[0].Header(consumer.HeaderAttempt))
	first, err := time.Parse(time.RFC3339Nano, dl[0].Header(consumer.HeaderFirstFailedAt))
	require.NoError(t, err)
	require.WithinDuration(t, starts[0], first, time.Second, "first-failed-at comes from the first attempt (kept in memory by the retrying Source)")
}
