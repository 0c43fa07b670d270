package tracing_test

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/goleak"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/obstest"
	"github.com/oncely/oncely/middleware/tracing"
)

// obsProduce starts and ends a producer span and returns its context and
// the headers a producer would send (traceparent, tracestate).
func obsProduce(t *testing.T, tp trace.TracerProvider, prop propagation.TextMapPropagator) (trace.SpanContext, map[string]string) {
	t.Helper()
	ts, err := trace.ParseTraceState("vendor=abc")
	require.NoError(t, err)
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceState: ts}))
	ctx, span := tp.Tracer("producer").Start(ctx, "send payments", trace.WithSpanKind(trace.SpanKindProducer))
	defer span.End()
	h := map[string]string{}
	prop.Inject(ctx, propagation.MapCarrier(h))
	require.NotEmpty(t, h[consumer.HeaderTraceParent])
	return span.SpanContext(), h
}

func obsAttrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

func TestTracingConsumeSpanIsChildOfProducer(t *testing.T) {
	defer goleak.VerifyNone(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { require.NoError(t, tp.Shutdown(context.Background())) }()
	prop := propagation.TraceContext{}

	producer, headers := obsProduce(t, tp, prop)
	exp.Reset()

	// "traced" fails on attempt 1 (retried), then permanently on attempt 2
	// (dead-lettered); "plain" has no trace context and is a duplicate.
	msg := obstest.Msg("traced")
	msg.Headers = headers
	msg.Partition, msg.Offset = 3, 99
	src := obstest.NewSource(2)
	src.Publish(msg, obstest.Msg("plain"))
	h := consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
		if msg.ID == "plain" {
			consumer.MarkDuplicate(ctx)
			return nil
		}
		if !trace.SpanContextFromContext(ctx).IsValid() {
			return consumer.Permanent(errors.New("handler ran outside a span"))
		}
		if msg.Attempt == 1 {
			return errors.New("try again")
		}
		return consumer.Permanent(errors.New("bad payload"))
	})
	c, err := consumer.New(src, h, obstest.FastConfig(), tracing.Middleware(tp, prop))
	require.NoError(t, err)
	obstest.Run(t, c, src)

	spans := exp.GetSpans()
	require.Len(t, spans, 3, "one span per delivery attempt")
	var traced []tracetest.SpanStub
	var plain tracetest.SpanStub
	for _, s := range spans {
		require.Equal(t, trace.SpanKindConsumer, s.SpanKind)
		require.Equal(t, "process payments", s.Name)
		require.Equal(t, tracing.TracerName, s.InstrumentationScope.Name)
		if obsAttrs(s)["messaging.message.id"].AsString() == "plain" {
			plain = s
		} else {
			traced = append(traced, s)
		}
	}
	require.Len(t, traced, 2)
	slices.SortFunc(traced, func(a, b tracetest.SpanStub) int {
		return cmp.Compare(obsAttrs(a)[tracing.AttrAttempt].AsInt64(), obsAttrs(b)[tracing.AttrAttempt].AsInt64())
	})
	for i, s := range traced {
		attempt := int64(i + 1)
		a := obsAttrs(s)
		require.Equal(t, producer.TraceID(), s.SpanContext.TraceID(), "attempt %d continues the producer's trace", attempt)
		require.Equal(t, producer.SpanID(), s.Parent.SpanID(), "attempt %d's parent is the producer span", attempt)
		require.True(t, s.Parent.IsRemote())
		require.Equal(t, "vendor=abc", s.SpanContext.TraceState().String(), "tracestate carried on")
		require.Equal(t, "kafka", a["messaging.system"].AsString())
		require.Equal(t, "payments", a["messaging.destination.name"].AsString())
		require.Equal(t, "traced", a["messaging.message.id"].AsString())
		require.Equal(t, "ledger", a["messaging.consumer.group.name"].AsString())
		require.Equal(t, "process", a["messaging.operation.type"].AsString())
		require.Equal(t, "3", a["messaging.destination.partition.id"].AsString())
		require.Equal(t, int64(99), a["messaging.kafka.offset"].AsInt64())
		require.Equal(t, attempt, a[tracing.AttrAttempt].AsInt64())
		require.Equal(t, codes.Error, s.Status.Code)
		require.Len(t, s.Events, 1)
		require.Equal(t, "exception", s.Events[0].Name)
		wantClass := map[int64]string{1: "retryable", 2: "permanent"}[attempt]
		require.Equal(t, wantClass, a[tracing.AttrErrorClass].AsString())
	}

	require.False(t, plain.Parent.IsValid(), "no traceparent: a root span")
	require.Equal(t, codes.Unset, plain.Status.Code)
	require.True(t, obsAttrs(plain)[tracing.AttrDuplicate].AsBool())

	// The retry and dead-letter copies carry the producer's trace context on.
	require.Len(t, src.Retried(), 1)
	require.Equal(t, headers[consumer.HeaderTraceParent], src.Retried()[0][consumer.HeaderTraceParent])
	require.Equal(t, headers[consumer.HeaderTraceState], src.Retried()[0][consumer.HeaderTraceState])
	require.Equal(t, headers[consumer.HeaderTraceParent], src.Dead()["traced"][consumer.HeaderTraceParent])
	require.Equal(t, headers[consumer.HeaderTraceState], src.Dead()["traced"][consumer.HeaderTraceState])
}

func TestFailureHeadersKeepTraceContext(t *testing.T) {
	msg := obstest.Msg("m1")
	msg.Headers = map[string]string{
		consumer.HeaderTraceParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		consumer.HeaderTraceState:  "vendor=abc",
	}
	for _, f := range []consumer.Failure{
		{Consumer: "ledger", Err: errors.New("x"), NextAttempt: 2, NotBefore: time.Now().Add(time.Second)},
		{Consumer: "ledger", Err: errors.New("x"), Reason: consumer.ReasonExhausted, NextAttempt: 5},
	} {
		h := consumer.FailureHeaders(msg, f)
		require.Equal(t, msg.Headers[consumer.HeaderTraceParent], h[consumer.HeaderTraceParent])
		require.Equal(t, msg.Headers[consumer.HeaderTraceState], h[consumer.HeaderTraceState])
		// And on the next hop too.
		next := msg.Clone()
		next.Headers = h
		h2 := consumer.FailureHeaders(next, f)
		require.Equal(t, msg.Headers[consumer.HeaderTraceParent], h2[consumer.HeaderTraceParent])
	}
}

func TestTracingRecordsPanic(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { require.NoError(t, tp.Shutdown(context.Background())) }()
	h := consumer.Chain(consumer.HandlerFunc(func(context.Context, *consumer.Message) error { panic("kaboom") }),
		consumer.Recover, tracing.Middleware(tp, propagation.TraceContext{}))
	err := h.Handle(context.Background(), obstest.Msg("p"))
	var pe *consumer.PanicError
	require.ErrorAs(t, err, &pe, "the panic still reaches Recover")
	require.Contains(t, string(pe.Stack), "TestTracingRecordsPanic.func", "the stack still shows where the handler panicked")
	spans := exp.GetSpans()
	require.Len(t, spans, 1, "the span is ended despite the panic")
	require.Equal(t, codes.Error, spans[0].Status.Code)
	require.Equal(t, "panic: kaboom", spans[0].Status.Description)
	_, hasSystem := obsAttrs(spans[0])["messaging.system"]
	require.False(t, hasSystem, "outside a Consumer the broker is unknown")
}

func TestTracingHeaderCaseInsensitive(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { require.NoError(t, tp.Shutdown(context.Background())) }()
	prop := propagation.TraceContext{}
	producer, headers := obsProduce(t, tp, prop)
	exp.Reset()
	msg := obstest.Msg("c")
	msg.Headers = map[string]string{"Traceparent": headers[consumer.HeaderTraceParent]}
	h := tracing.Middleware(tp, prop)(consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return nil }))
	require.NoError(t, h.Handle(consumer.WithBroker(context.Background(), "sqs"), msg))
	spans := exp.GetSpans()
	require.Len(t, spans, 1)
	require.Equal(t, producer.SpanID(), spans[0].Parent.SpanID())
	require.Equal(t, "aws_sqs", obsAttrs(spans[0])["messaging.system"].AsString())
}

func TestTracingUnsampled(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())))
	defer func() { require.NoError(t, tp.Shutdown(context.Background())) }()
	prop := propagation.TraceContext{}
	_, headers := obsProduce(t, tp, prop)
	exp.Reset()
	unsampled := map[string]string{consumer.HeaderTraceParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"}

	var seen trace.SpanContext
	fail := errors.New("boom")
	h := consumer.Chain(consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
		seen = trace.SpanContextFromContext(ctx)
		switch msg.ID {
		case "panics":
			panic("kaboom")
		case "fails":
			return fail
		}
		return nil
	}), consumer.Recover, tracing.Middleware(tp, prop))
	for _, id := range []string{"ok", "fails", "panics"} {
		msg := obstest.Msg(id)
		msg.Headers = unsampled
		err := h.Handle(consumer.WithAttemptState(context.Background()), msg)
		switch id {
		case "ok":
			require.NoError(t, err)
		case "fails":
			require.ErrorIs(t, err, fail)
		case "panics":
			var pe *consumer.PanicError
			require.ErrorAs(t, err, &pe, "the panic still reaches Recover")
		}
		require.Equal(t, "0af7651916cd43dd8448eb211c80319c", seen.TraceID().String(), "the handler's context continues the producer's trace")
		require.False(t, seen.IsSampled())
	}
	require.Empty(t, exp.GetSpans(), "an unsampled parent makes unsampled spans")

	msg := obstest.Msg("sampled")
	msg.Headers = headers
	require.NoError(t, h.Handle(context.Background(), msg))
	require.Len(t, exp.GetSpans(), 1)
	require.Equal(t, "process payments", exp.GetSpans()[0].Name)
}

// endCountingTP is a TracerProvider whose spans do not record and count
// their End calls.
type endCountingTP struct {
	tracenoop.TracerProvider
	ends *atomic.Int32
}

func (p endCountingTP) Tracer(string, ...trace.TracerOption) trace.Tracer {
	return endCountingTracer{ends: p.ends}
}

type endCountingTracer struct {
	tracenoop.Tracer
	ends *atomic.Int32
}

func (t endCountingTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	ctx, s := t.Tracer.Start(ctx, name, opts...)
	return ctx, endCountingSpan{Span: s, ends: t.ends}
}

type endCountingSpan struct {
	trace.Span
	ends *atomic.Int32
}

func (s endCountingSpan) End(...trace.SpanEndOption) { s.ends.Add(1) }

func TestTracingEndsSpansThatDoNotRecord(t *testing.T) {
	var ends atomic.Int32
	h := consumer.Chain(consumer.HandlerFunc(func(_ context.Context, msg *consumer.Message) error {
		if msg.ID == "panics" {
			panic("kaboom")
		}
		return nil
	}), consumer.Recover, tracing.Middleware(endCountingTP{ends: &ends}, propagation.TraceContext{}))
	require.NoError(t, h.Handle(context.Background(), obstest.Msg("ok")))
	require.Equal(t, int32(1), ends.Load())
	require.Error(t, h.Handle(context.Background(), obstest.Msg("panics")))
	require.Equal(t, int32(2), ends.Load(), "a panicking handler's span is ended too")
}

// TestTracingBatchSpanLinksProducers traces a batch call. Bug caught: a
// batch traced as one message's child (the other producers' traces lose
// their consumer), links missing, or the batch size not recorded.
func TestTracingBatchSpanLinksProducers(t *testing.T) {
	defer goleak.VerifyNone(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { require.NoError(t, tp.Shutdown(context.Background())) }()
	prop := propagation.TraceContext{}
	p1, h1 := obsProduce(t, tp, prop)
	p2, h2 := obsProduce(t, tp, prop)
	exp.Reset()

	a, b, c := obstest.Msg("a"), obstest.Msg("b"), obstest.Msg("c")
	a.Headers, b.Headers = h1, h2 // c has no trace context
	bh, ok := tracing.Middleware(tp, prop)(consumer.BatchHandlerFunc(func(ctx context.Context, _ []*consumer.Message) error {
		if !trace.SpanContextFromContext(ctx).IsValid() {
			return errors.New("handler ran outside a span")
		}
		return consumer.BatchError{Failed: map[int]error{2: errors.New("bad c")}}
	})).(consumer.BatchHandler)
	require.True(t, ok)
	err := bh.HandleBatch(consumer.WithName(context.Background(), "ledger"), []*consumer.Message{a, b, c})
	_, named := consumer.AsBatchError(err)
	require.True(t, named, "%v", err)

	spans := exp.GetSpans()
	require.Len(t, spans, 1, "one span per batch call")
	s := spans[0]
	require.False(t, s.Parent.IsValid(), "a batch span is a root linked to its producers")
	require.Len(t, s.Links, 2)
	require.Equal(t, p1.SpanID(), s.Links[0].SpanContext.SpanID())
	require.Equal(t, p2.SpanID(), s.Links[1].SpanContext.SpanID())
	attrs := obsAttrs(s)
	require.Equal(t, int64(3), attrs["messaging.batch.message_count"].AsInt64())
	require.Equal(t, "ledger", attrs["messaging.consumer.group.name"].AsString())
	require.Equal(t, codes.Error, s.Status.Code)
}
