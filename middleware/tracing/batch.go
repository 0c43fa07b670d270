package tracing

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/oncely/oncely/consumer"
)

// batchTracer is Middleware around a BatchHandler: one span per batch call,
// linked to every message's producer span.
type batchTracer struct {
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
	names  *spanNames
	next   consumer.BatchHandler
}

func (h *batchTracer) Handle(ctx context.Context, msg *consumer.Message) error {
	return consumer.HandleOne(ctx, h, msg)
}

func (h *batchTracer) HandleBatch(ctx context.Context, msgs []*consumer.Message) (err error) {
	source := ""
	if len(msgs) > 0 {
		source = msgs[0].Source
	}
	links := make([]trace.Link, 0, len(msgs))
	for _, m := range msgs {
		sc := trace.SpanContextFromContext(h.prop.Extract(context.Background(), headerCarrier(m.Headers)))
		if sc.IsValid() {
			links = append(links, trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{semconv.MessagingMessageID(m.ID)}})
		}
	}
	ctx, span := h.tracer.Start(ctx, h.names.of(source), trace.WithSpanKind(trace.SpanKindConsumer), trace.WithLinks(links...))
	if !span.IsRecording() {
		defer span.End()
		return h.next.HandleBatch(ctx, msgs)
	}
	attrs := []attribute.KeyValue{
		semconv.MessagingOperationTypeProcess,
		semconv.MessagingOperationName("process"),
		semconv.MessagingDestinationName(source),
		semconv.MessagingBatchMessageCount(len(msgs)),
	}
	if sys := messagingSystem(consumer.BrokerFromContext(ctx)); sys.Valid() {
		attrs = append(attrs, sys)
	}
	if name := consumer.NameFromContext(ctx); name != "" {
		attrs = append(attrs, semconv.MessagingConsumerGroupName(name))
	}
	span.SetAttributes(attrs...)
	defer func() {
		if v := recover(); v != nil {
			perr := fmt.Errorf("panic: %v", v)
			span.RecordError(perr, trace.WithStackTrace(true))
			span.SetStatus(codes.Error, perr.Error())
			span.End()
			panic(v)
		}
		if err != nil {
			span.SetAttributes(AttrErrorClass.String(consumer.Classify(err).String()))
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}()
	return h.next.HandleBatch(ctx, msgs)
}
