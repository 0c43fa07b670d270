// Package rabbitmq is oncely's RabbitMQ adapter, on
// github.com/rabbitmq/amqp091-go: a consumer.Source with manual acks, a
// bounded per-consumer prefetch, retries through TTL queues, a dead-letter
// queue, and its own reconnect supervisor. A Publisher sends messages with
// publisher confirms.
//
// # Topology
//
// New declares (or, when they exist, verifies) these durable queues for
// Config.Queue "payments" and Config.Consumer "ledger", quorum by default:
//
//	payments                     the source queue; x-delivery-limit (20) and
//	                             x-dead-letter-exchange payments.dlx, at-least-once
//	payments.ledger.retry.<tier> one per tier: x-message-ttl = tier,
//	                             dead-lettering back to payments
//	payments.ledger.dlq          the dead-letter queue, bound to the fanout
//	                             exchange payments.dlx
//
// A queue that exists with other arguments is reported as a TopologyError
// naming the broker's complaint and the arguments wanted, not as a bare
// 406. The source queue's arguments do not depend on the consumer name, so
// a producer (Publisher) can declare it first.
//
// # Settlement
//
// Ack is basic.ack on the delivery's own channel, after the handler chain
// returned. Retry publishes a copy (same message_id, body and properties,
// the runtime's headers, persistent) to the retry queue of the smallest
// tier not shorter than the delay, waits for the publisher confirm (and
// checks the mandatory publish was not returned), then acks the original;
// when the TTL expires the broker moves the copy back to the source queue.
// A copy that comes back before its oncely-retry-not-before (a delay longer
// than the largest tier) is parked again for the rest, so retries are never
// early and delays are unbounded. DeadLetter does the same with the
// dead-letter queue. A failed or unconfirmed publish leaves the original
// unacked. Nothing is ever nacked or rejected back to the queue: no requeue
// loops, and the broker's delivery count moves only when a consumer loses
// its channel with the message unacked. Past the delivery limit the broker
// dead-letters (never drops) the message into the dead-letter queue.
//
// Message.Attempt is the larger of the oncely-attempt header and
// x-delivery-count+1 (quorum queues only; the broker's counter is a lower
// bound: it restarts on every retry hop, and it also counts deliveries
// returned unprocessed when a consumer stopped or crashed). The redelivered
// flag is reported in Message.Coordinates and never used to skip work. The
// ID is the message_id property, else the message-id header; the ordering
// key is the Config.KeyHeader header. Header values of every AMQP type are
// converted to strings.
//
// # Connections
//
// A Source holds one connection with a consume channel and a confirm-mode
// publish channel: a generation. When any of them closes, the generation
// ends: its deliveries' Lost channels close (the runtime abandons them; the
// broker redelivers them), their buffered deliveries are dropped, and the
// supervisor reconnects with backoff and jitter, declares the topology again
// and resumes consuming. Settling a delivery of an ended generation fails
// with ErrStaleDelivery and touches nothing: delivery tags restart at 1 on a
// new channel, so an old tag would ack an unrelated message. Every Notify
// channel is drained by a goroutine of its own, and every channel RPC is
// bounded by Config.RPCTimeout.
//
// Close cancels the consumer, waits for settlements in flight, closes the
// consume channel (the broker answers only after processing every ack sent
// before), then the publish channel, then the connection: no ack is lost,
// and the queue keeps exactly the unprocessed messages.
//
// # Limits
//
//   - One queue feeds one logical consumer (several processes of it may
//     share the queue); another consumer name needs its own queue.
//   - Backlog counts the messages ready in the queue plus those this Source
//     holds; AMQP cannot see other consumers' unacknowledged messages.
//   - RabbitMQ's consumer_timeout (30 minutes by default) closes a channel
//     whose oldest delivery stays unacked that long; keep handlers shorter
//     or raise the timeout.
//   - Classic retry queues dead-letter at-most-once inside the broker (a
//     cluster can lose a copy between queues); quorum ones at-least-once.
package rabbitmq
