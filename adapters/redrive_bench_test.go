package adapters_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/benchtest"
	"github.com/oncely/oncely/internal/envtest"
)

// BenchmarkRedriveRate is issue 21's measure: a filtered redrive of 10,000
// dead letters at Rate 1000 takes 10–11 s and loses none. Each broker's
// dead-letter destination holds selected+others letters (12,000 by
// default), dead-lettered through the broker's own Source; Reason picks the
// selected ones. It reports the redrive's elapsed seconds (10 s is the
// Rate's floor) and fails unless, counted afterwards, exactly the selected
// IDs arrived on the source once each and exactly the others are still
// dead-lettered, once each.
//
//	go test -run '^$' -bench 'BenchmarkRedriveRate/rabbitmq' -benchtime 1x ./adapters/
//	knobs: ONCELY_REDRIVE_BENCH_SELECTED=10000 ONCELY_REDRIVE_BENCH_OTHERS=2000 ONCELY_REDRIVE_BENCH_RATE=1000
func BenchmarkRedriveRate(b *testing.B) {
	brokers := []struct {
		name string
		url  func(testing.TB) string
	}{
		{"mem", func(testing.TB) string { return "mem://" }},
		{"rabbitmq", func(t testing.TB) string { return envtest.RabbitMQ(t) }},
		{"kafka", func(t testing.TB) string { return suiteKafka(t) }},
		{"sqs", func(t testing.TB) string {
			return "sqs://us-east-1?endpoint=" + envtest.SQS(t) + "&visibility_timeout=60s&wait=1"
		}},
		{"nats", func(t testing.TB) string { return envtest.NATS(t) }},
		{"redis", func(t testing.TB) string { return envtest.Redis(t) + "?lease=60s" }},
	}
	for _, br := range brokers {
		b.Run(br.name, func(b *testing.B) {
			for range b.N {
				benchRedriveRate(b, br.url(b))
			}
		})
	}
}

func benchRedriveRate(b *testing.B, url string) {
	selected := benchtest.EnvInt("ONCELY_REDRIVE_BENCH_SELECTED", 10000)
	others := benchtest.EnvInt("ONCELY_REDRIVE_BENCH_OTHERS", 2000)
	rate := float64(benchtest.EnvInt("ONCELY_REDRIVE_BENCH_RATE", 1000))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	br, err := adapters.Open(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = br.Close() }()
	source, name := adaptertest.SourceName("redrive-rate"), adaptertest.ConsumerName

	// The others (permanent) are spread evenly among the selected
	// (exhausted), so the filter skips all through the destination.
	total := selected + others
	isOther := map[string]bool{}
	var msgs []*consumer.Message
	for i := range total {
		id := "r-" + strconv.Itoa(i)
		msgs = append(msgs, &consumer.Message{ID: id, Key: id, Body: []byte("body " + id)})
		if (i+1)*others/total != i*others/total {
			isOther[id] = true
		}
	}
	for start := 0; start < len(msgs); start += 500 {
		if err := br.Publish(ctx, source, msgs[start:min(start+500, len(msgs))]...); err != nil {
			b.Fatal(err)
		}
	}
	src, err := br.Source(ctx, source, name)
	if err != nil {
		b.Fatal(err)
	}
	settleAll(b, ctx, src, len(msgs), func(ctx context.Context, d consumer.Delivery) error {
		m := d.Message()
		reason, cause := consumer.ReasonExhausted, "timeout calling bank"
		if isOther[m.ID] {
			reason, cause = consumer.ReasonPermanent, "invalid amount"
		}
		return d.DeadLetter(ctx, consumer.FailureHeaders(m, consumer.Failure{Consumer: name, Err: errors.New(cause), Reason: reason, NextAttempt: m.Attempt}))
	})
	if err := src.Close(ctx); err != nil {
		b.Fatal(err)
	}
	waitDeadLetters(b, ctx, br, source, name, len(msgs))

	b.ResetTimer()
	start := time.Now()
	res, err := br.Redrive(ctx, source, name, adapters.RedriveOptions{Reason: consumer.ReasonExhausted, Rate: rate})
	elapsed := time.Since(start)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(elapsed.Seconds(), "s/redrive")
	b.ReportMetric(float64(res.Redriven)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(elapsed.Seconds()/(float64(selected)/rate), "x_rate_floor")
	b.Logf("%d of %d dead letters redriven in %.2fs at Rate %g (floor %.1fs); result %+v", res.Redriven, len(msgs), elapsed.Seconds(), rate, float64(selected)/rate, res)
	if want := (adapters.RedriveResult{Seen: len(msgs), Redriven: selected, Skipped: others}); res != want {
		b.Errorf("redrive result %+v, want %+v", res, want)
	}

	// Count: every selected ID once on the source, nothing else.
	src, err = br.Source(ctx, source, name)
	if err != nil {
		b.Fatal(err)
	}
	arrived := map[string]int{}
	var mu sync.Mutex
	settleAll(b, ctx, src, selected, func(ctx context.Context, d consumer.Delivery) error {
		mu.Lock()
		arrived[d.Message().ID]++
		mu.Unlock()
		return d.Ack(ctx)
	})
	adaptertest.AssertQuiet(b, src, 2*time.Second)
	if err := src.Close(ctx); err != nil {
		b.Fatal(err)
	}
	lost, dup, wrong := 0, 0, 0
	for _, m := range msgs {
		n := arrived[m.ID]
		switch {
		case isOther[m.ID] && n > 0:
			wrong++
		case !isOther[m.ID] && n == 0:
			lost++
		case n > 1:
			dup++
		}
	}
	left, err := br.DeadLetters(ctx, source, name, 0)
	if err != nil {
		b.Fatal(err)
	}
	leftOthers := 0
	for _, d := range left {
		if !isOther[d.Message.ID] || d.Copies != 1 {
			b.Errorf("dead letter %q (%d copies) left, want only the %d others once each", d.Message.ID, d.Copies, others)
			continue
		}
		leftOthers++
	}
	b.ReportMetric(float64(lost), "lost")
	b.ReportMetric(float64(dup), "duplicated")
	b.Logf("counted: %d IDs on the source (%d lost, %d duplicated, %d not selected), %d others still dead-lettered", len(arrived), lost, dup, wrong, leftOthers)
	if lost != 0 || dup != 0 || wrong != 0 || leftOthers != others || len(left) != others {
		b.Errorf("lost %d, duplicated %d, redriven though not selected %d, %d of %d others left in %d dead letters", lost, dup, wrong, leftOthers, others, len(left))
	}
}

// settleAll receives n deliveries from src and settles each with settle,
// up to 32 at a time.
func settleAll(b *testing.B, ctx context.Context, src consumer.Source, n int, settle func(context.Context, consumer.Delivery) error) {
	b.Helper()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for got := 0; got < n; {
		ds, err := src.Receive(rctx, min(100, n-got))
		if err != nil {
			b.Fatalf("received %d of %d: %v", got, n, err)
		}
		got += len(ds)
		for _, d := range ds {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				if err := settle(rctx, d); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s: %w", d.Message().ID, err))
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
}

// waitDeadLetters waits until the destination shows n dead letters.
func waitDeadLetters(b *testing.B, ctx context.Context, br adapters.Broker, source, name string, n int) {
	b.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		dl, err := br.DeadLetters(ctx, source, name, 0)
		if err != nil {
			b.Fatal(err)
		}
		if len(dl) >= n {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d dead letters after a minute", len(dl), n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
