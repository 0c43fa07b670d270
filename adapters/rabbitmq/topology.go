package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncely/oncely/internal/names"
	"github.com/oncely/oncely/retry"
)

// ErrTopologyMismatch is wrapped by the error New returns when a queue
// already exists with arguments other than those the adapter declares.
var ErrTopologyMismatch = errors.New("queue exists with other arguments")

// TopologyError reports a queue that exists with arguments other than those
// the adapter needs. It wraps ErrTopologyMismatch.
type TopologyError struct {
	// Queue is the queue's name.
	Queue string
	// Want are the arguments the adapter declares.
	Want amqp.Table
	// Broker is the broker's explanation, naming the first differing
	// argument (AMQP cannot read a queue's arguments back).
	Broker string
}

func (e *TopologyError) Error() string {
	return fmt.Sprintf("queue %q already exists with other arguments than the adapter declares: the broker says %q; the adapter wants %s. "+
		"Change Config (QueueType, DeliveryLimit, Tiers) to match the queue, or drain and delete the queue so the adapter can declare it",
		e.Queue, e.Broker, formatArgs(e.Want))
}

func (e *TopologyError) Unwrap() error { return ErrTopologyMismatch }

func formatArgs(t amqp.Table) string {
	keys := slices.Sorted(maps.Keys(t))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, headerString(t[k]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// DeadLetterQueue names the dead-letter queue of queue and consumerName:
// "<queue>.<consumer>.dlq" for a consumer name without '.'; any other is
// escaped (see pairPrefix). No two (queue, consumer) pairs share one.
func DeadLetterQueue(queue, consumerName string) string {
	return pairPrefix(queue, consumerName) + "dlq"
}

// RetryQueue names the retry queue of queue and consumerName for a delay
// tier: "<queue>.<consumer>.retry.<tier>" for a consumer name without '.',
// the tier formatted by retry.Name ("10s"); any other is escaped (see
// pairPrefix). No two (queue, consumer) pairs share one.
func RetryQueue(queue, consumerName string, tier time.Duration) string {
	return pairPrefix(queue, consumerName) + "retry." + retry.Name(tier)
}

// pairPrefix begins the derived queue names of (queue, consumerName):
// "<queue>.<consumer>." for a consumer name without '.', else
// "<queue>.<escaped consumer>.." with every '.' and '_' written as '_' and
// two hex digits ("a.b" is "a_2eb"). The part before the kind is empty
// only for an escaped name, and neither form holds '.', so the queue and
// consumer can be read back from the name.
func pairPrefix(queue, consumerName string) string {
	if !strings.Contains(consumerName, ".") {
		return queue + "." + consumerName + "."
	}
	return queue + "." + names.Escape(consumerName, '_', func(c byte) bool { return c != '.' }) + ".."
}

func dlxName(queue string) string { return queue + ".dlx" }

// queueSpec is one queue to declare.
type queueSpec struct {
	name string
	args amqp.Table
}

// topology names and argues the queues of one (queue, consumer) pair.
type topology struct {
	queue, consumer string
	qtype           QueueType
	limit           int
	// legacyLimit, when set, is a delivery limit an existing source queue
	// may keep instead of limit (see declareAll).
	legacyLimit int
	tiers       retry.Tiers
}

func (t topology) dlq() string { return DeadLetterQueue(t.queue, t.consumer) }

func (t topology) retryQueue(tier int) string {
	return RetryQueue(t.queue, t.consumer, t.tiers[tier])
}

// retryQueueFor names the retry queue of the tier for a delay d.
func (t topology) retryQueueFor(d time.Duration) string {
	return RetryQueue(t.queue, t.consumer, t.tiers.Tier(d))
}

func (t topology) retryNames() []string {
	out := make([]string, len(t.tiers))
	for i := range t.tiers {
		out[i] = t.retryQueue(i)
	}
	return out
}

// source is the source queue. Its arguments do not depend on the consumer
// name, so a producer can declare it too: broker-side dead letters (past
// the delivery limit) go to the fanout exchange <queue>.dlx, to which each
// consumer's dead-letter queue is bound.
func (t topology) source() queueSpec {
	if t.qtype == Classic {
		return queueSpec{name: t.queue, args: amqp.Table{"x-queue-type": string(Classic)}}
	}
	return queueSpec{name: t.queue, args: amqp.Table{
		"x-queue-type":           string(Quorum),
		"x-delivery-limit":       int64(t.limit),
		"x-dead-letter-exchange": dlxName(t.queue),
		"x-dead-letter-strategy": "at-least-once",
		"x-overflow":             "reject-publish",
	}}
}

func (t topology) dlqSpec() queueSpec {
	args := amqp.Table{"x-queue-type": string(t.qtype)}
	if t.qtype == Quorum {
		args["x-delivery-limit"] = int64(dlqDeliveryLimit)
	}
	return queueSpec{name: t.dlq(), args: args}
}

// retries are the TTL queues, one per tier, dead-lettering back to the
// source queue through the default exchange. Quorum retry queues
// dead-letter at-least-once (which needs x-overflow reject-publish).
func (t topology) retries() []queueSpec {
	out := make([]queueSpec, len(t.tiers))
	for i, d := range t.tiers {
		args := amqp.Table{
			"x-queue-type":              string(t.qtype),
			"x-message-ttl":             d.Milliseconds(),
			"x-dead-letter-exchange":    "",
			"x-dead-letter-routing-key": t.queue,
		}
		if t.qtype == Quorum {
			args["x-dead-letter-strategy"] = "at-least-once"
			args["x-overflow"] = "reject-publish"
		}
		out[i] = queueSpec{name: t.retryQueue(i), args: args}
	}
	return out
}

// declarer opens channels on one connection for declarations; a failed
// declaration closes its channel, so it opens another.
type declarer struct {
	conn *amqp.Connection
	rpc  func(ctx context.Context, what string, fn func() error) error
	log  interface {
		Warn(msg string, args ...any)
	}
	ch *amqp.Channel
}

func (d *declarer) channel(ctx context.Context) (*amqp.Channel, error) {
	if d.ch != nil && !d.ch.IsClosed() {
		return d.ch, nil
	}
	var ch *amqp.Channel
	err := d.rpc(ctx, "opening a channel", func() (err error) {
		ch, err = d.conn.Channel()
		return err
	})
	if err != nil {
		return nil, err
	}
	d.ch = ch
	return ch, nil
}

func (d *declarer) close() {
	if d.ch != nil && !d.ch.IsClosed() {
		_ = d.rpc(context.Background(), "closing the declaration channel", d.ch.Close)
	}
}

// queue makes sure spec exists: a passive declare first; a missing queue is
// declared. With verify, an existing one is declared again with the same
// arguments, which the broker refuses (406) when they differ, reported as a
// TopologyError; without configure permission (403) it is used as it is,
// with a warning. Without verify an existing queue is used as it is.
func (d *declarer) queue(ctx context.Context, spec queueSpec, verify bool) error {
	ch, err := d.channel(ctx)
	if err != nil {
		return err
	}
	err = d.rpc(ctx, "checking queue "+spec.name, func() error {
		_, err := ch.QueueDeclarePassive(spec.name, true, false, false, false, nil)
		return err
	})
	exists := err == nil
	if err != nil && amqpCode(err) != amqp.NotFound {
		return err
	}
	if exists && !verify {
		return nil
	}
	if ch, err = d.channel(ctx); err != nil {
		return err
	}
	err = d.rpc(ctx, "declaring queue "+spec.name, func() error {
		_, err := ch.QueueDeclare(spec.name, true, false, false, false, spec.args)
		return err
	})
	switch code := amqpCode(err); {
	case err == nil:
		return nil
	case exists && code == amqp.PreconditionFailed:
		var ae *amqp.Error
		errors.As(err, &ae)
		return &TopologyError{Queue: spec.name, Want: spec.args, Broker: ae.Reason}
	case exists && code == amqp.AccessRefused:
		d.log.Warn("queue exists and its arguments cannot be checked without configure permission; using it as it is",
			"queue", spec.name, "want", formatArgs(spec.args))
		return nil
	}
	return err
}

func (d *declarer) exchange(ctx context.Context, name, kind string) error {
	ch, err := d.channel(ctx)
	if err != nil {
		return err
	}
	return d.rpc(ctx, "declaring exchange "+name, func() error {
		return ch.ExchangeDeclare(name, kind, true, false, false, false, nil)
	})
}

func (d *declarer) bind(ctx context.Context, queue, exchange string) error {
	ch, err := d.channel(ctx)
	if err != nil {
		return err
	}
	return d.rpc(ctx, "binding "+queue+" to "+exchange, func() error {
		return ch.QueueBind(queue, "", exchange, false, nil)
	})
}

// declareAll declares the source queue first (so a source that exists with
// other arguments is reported before anything is created), then the
// dead-letter queue (and, for quorum, the dead-letter exchange and its
// binding) and the retry queues.
//
// A source queue declared by an earlier version with its default delivery
// limit (legacyDeliveryLimit, 20) is used as it is when legacyLimit allows
// it (DeliveryLimit left at its default), with a warning: it differs from
// the current default in that argument only.
func (t topology) declareAll(ctx context.Context, d *declarer) error {
	defer d.close()
	if err := d.queue(ctx, t.source(), true); err != nil {
		old := t
		old.limit = t.legacyLimit
		if !errors.Is(err, ErrTopologyMismatch) || t.legacyLimit == 0 || d.queue(ctx, old.source(), true) != nil {
			return err
		}
		d.log.Warn("the source queue keeps the delivery limit an earlier version declared; the broker counts clean closes towards it too. "+
			"Recreate the queue for the new default, or set DeliveryLimit to keep this one and silence this warning",
			"queue", t.queue, "x-delivery-limit", t.legacyLimit, "default", t.limit)
	}
	if err := d.queue(ctx, t.dlqSpec(), true); err != nil {
		return err
	}
	if t.qtype == Quorum {
		if err := d.exchange(ctx, dlxName(t.queue), amqp.ExchangeFanout); err != nil {
			return err
		}
		if err := d.bind(ctx, t.dlq(), dlxName(t.queue)); err != nil {
			return err
		}
	}
	for _, spec := range t.retries() {
		if err := d.queue(ctx, spec, true); err != nil {
			return err
		}
	}
	return nil
}

// amqpCode returns the AMQP reply code in err, or 0.
func amqpCode(err error) int {
	var ae *amqp.Error
	if errors.As(err, &ae) {
		return ae.Code
	}
	return 0
}
