package tracing_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware/tracing"
)

// Microbenchmarks of one unsampled span, with -benchmem:
//
//	go test -run '^$' -bench Unsampled -benchmem ./middleware/tracing/
//
// BenchmarkSDKUnsampledSpan is the floor any user of the SDK pays for an
// unsampled span (tracer.Start and End on a NeverSample provider, span kind
// consumer, no attributes); BenchmarkMiddlewareUnsampled is Middleware's cost per
// message over a no-op handler, the same SDK call included.

// benchCtx is an attempt context over a few layers, as the runtime's is.
func benchCtx() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	_ = cancel
	ctx, cancel = context.WithCancel(ctx)
	_ = cancel
	return consumer.WithAttemptState(ctx)
}

func BenchmarkSDKUnsampledSpan(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	tracer := tp.Tracer(tracing.TracerName)
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer)} // built once, as Middleware does
	ctx := benchCtx()
	b.ReportAllocs()
	for b.Loop() {
		_, span := tracer.Start(ctx, "process bench", opts...)
		span.End()
	}
}

func BenchmarkMiddlewareUnsampled(b *testing.B) {
	for _, tc := range []struct {
		name    string
		headers map[string]string
		sampler sdktrace.Sampler
	}{
		// As the Kafka benchmark's records: a message ID header, no trace
		// context, a sampler that samples nothing.
		{"no_parent", map[string]string{consumer.HeaderMessageID: "m-1"}, sdktrace.NeverSample()},
		// A producer's unsampled traceparent, a parent-based sampler.
		{"unsampled_parent", map[string]string{
			consumer.HeaderMessageID:   "m-1",
			consumer.HeaderTraceParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00",
		}, sdktrace.ParentBased(sdktrace.AlwaysSample())},
	} {
		b.Run(tc.name, func(b *testing.B) {
			tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(tc.sampler))
			defer func() { _ = tp.Shutdown(context.Background()) }()
			h := tracing.Middleware(tp, propagation.TraceContext{})(consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return nil }))
			msg := &consumer.Message{ID: "m-1", Key: "k", Source: "bench", Attempt: 1, Partition: 3, Offset: 42, Headers: tc.headers}
			ctx := benchCtx()
			b.ReportAllocs()
			for b.Loop() {
				if err := h.Handle(ctx, msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
