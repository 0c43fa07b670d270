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
//	payments                     the source queue; x-delivery-limit (100) and
//	                             x-dead-letter-exchange payments.dlx, at-least-once
//	payments.ledger.retry.<tier> one per tier: x-message-ttl = tier,
//	                             dead-lettering back to payments
//	payments.ledger.dlq          the dead-letter queue, bound to the fanout
//	                             exchange payments.dlx
//
// The retry queues are declared by the first Receive, and only as far as
// the consumer's retry policy reaches: consumer.New tells the Source the
// longest delay its policy asks for (consumer.TierLimiter), and the tiers
// up to the first one not shorter than it are declared (retry.Tiers.Upto;
// all of them for a Source no consumer.New told). A policy of 3 attempts
// with delays of 1 s and 2 s gets the 1s and 10s queues only.
//
// A consumer name holding '.' is escaped in these names (RetryQueue,
// DeadLetterQueue), so no two (queue, consumer) pairs share a queue.
//
// A queue that exists with other arguments is reported as a TopologyError
// naming the broker's complaint and the arguments wanted, not as a bare
// 406. The source queue's arguments do not depend on the consumer name, so
// a producer (Publisher) can declare it first.
//
// # Settlement
//
// Ack records the delivery as settled and returns; it does not wait for
// the basic.ack frame. A flusher per channel coalesces the acks: once every
// delivery up to tag W is settled, it sends one basic.ack(W, multiple) for
// all of them, as soon as the watermark moves (no timer). A delivery is
// never covered by a multiple ack while a lower tag of its channel is
// unsettled (still in a handler, or its retry publish unconfirmed).
// Deliveries settled above such a gap wait for it to close; if it stays
// open for 20ms (a slow handler), they, and those settled after them while
// the gap lasts, are acked one by one. If the generation ends before the
// frame is written, the message is redelivered, as it would be if the frame
// were lost on the wire; no ack of an ended generation is ever sent on a
// later channel. Close writes every recorded ack before it closes the
// channel; an Ack after that fails with ErrStaleDelivery.
//
// Retry publishes a copy (same message_id, body and properties,
// the runtime's headers, persistent) to the retry queue of the smallest
// tier not shorter than the delay (the runtime asks for a tier's delay, the
// one nearest its policy's, so its log states the wait; see
// Capabilities), waits for the publisher confirm (and
// checks the mandatory publish was not returned), then acks the original;
// when the TTL expires the broker moves the copy back to the source queue.
// A copy that comes back before its oncely-retry-not-before (a delay longer
// than the largest tier) is parked again for the rest, so retries are never
// early and delays are unbounded. DeadLetter does the same with the
// dead-letter queue. A failed, nacked, returned (unroutable) or unconfirmed
// publish leaves the original unacked; after an unroutable one (someone
// deleted the queue) the topology is declared again, so the next try finds
// it. Before it is published, a copy is fitted to the broker's limits
// (Config.MaxMessageSize, 128 MiB by default, and the connection's frame
// size for the headers) with consumer.FitCopy: the stack header goes first,
// then the error header is cut; a dead-letter copy then loses its body (size
// and SHA-256 marker headers stay) where that helps, then the producer's
// largest headers (listed in oncely-headers-removed; Config.KeyHeader
// stays), and a retry copy that still does not fit fails with
// consumer.ErrCopyRefused (the runtime dead-letters it).
// Deliveries report trimmed copies (consumer.CopyTrimmer). An ID longer than
// the message_id property's 255 bytes travels in the message-id header.
// Nothing is ever nacked or rejected back to the queue: no requeue loops.
//
// Message.Attempt comes from the oncely-attempt header alone: 1 on a first
// delivery, raised only by the runtime's retry copies, so it counts handler
// attempts. The quorum queue's x-delivery-count is no attempt count: the
// broker raises it whenever a channel closes with the message unacked, on
// a crash and also on a clean shutdown that returns prefetched deliveries no
// handler saw (measured on RabbitMQ 3.10, also after basic.cancel). It is
// reported in Message.Coordinates as evidence of crashes and closes. The
// source queue's x-delivery-limit (Config.DeliveryLimit, 100 by default)
// counts the same returns, so it is a guard against crash loops set well
// above what deploys add: past it the broker dead-letters the message
// through the exchange <queue>.dlx into the dead-letter queue (never
// drops it), and MessageFromDelivery names such a dead letter's reason
// ReasonDeliveryLimit. The redelivered flag is reported in
// Message.Coordinates and never used to skip work. The ID is the message_id
// property, else the message-id header; the ordering key is the
// Config.KeyHeader header. Header values of every AMQP type are converted
// to strings.
//
// The prefetch (Config.Prefetch, 128 by default) is reported as
// Capabilities.Prefetch; the runtime refuses a MaxInFlight below it, so the
// broker never pushes more than the runtime has room for. Consumer names
// split one queue (Capabilities.FanOut is false).
//
// Probe (consumer.Prober) passively declares the source queue on the
// current connection: the runtime asks it whether the broker is up when a
// settlement fails.
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
// A cluster's nodes may share one URL,
// amqp://user:pass@h1:5672,h2:5673,h3:5674/vhost (amqps:// alike): the
// hosts, comma-separated, share the user, password, vhost, query and TLS
// settings. Every connection (each Source generation, the Publisher's, the
// tools' Dial) tries the nodes in turn, starting after the node of its own
// last connection, so a connection lost with its node reconnects to the
// next one and the lost node is tried last; a refused login or vhost stops
// the round (a cluster's nodes share users). Errors name each node tried,
// without the password. A publish the broker nacks is sent again on a new
// channel and connection (a Source's copy: the session ends and its
// deliveries come back): on RabbitMQ 3.10, a channel whose quorum queue
// client stayed bound to a leader that died nacked every later publish.
//
// Opening a connection is bounded twice: Config.DialTimeout (15s) for the
// TCP connect, Config.HandshakeTimeout (10s) for TLS, the AMQP handshake,
// the login and the vhost. A refused login wraps ErrLoginRefused, a refused
// vhost ErrVhostRefused; errors name user and vhost, never the password.
// amqps:// connections use Config.TLS.
//
// Close waits for settlements in flight, writes the pending acks, closes
// the consume channel, then the publish channel, then the connection: no
// ack is lost, the queue keeps exactly the unprocessed messages, and the
// next consumer gets each key's messages in their order (Close sends no
// basic.cancel: a quorum queue would requeue the deliveries on their way to
// the cancelled consumer ahead of the earlier ones it still holds). After a graceful stop no settled delivery lies
// above an unsettled one (the runtime settled all it received; the rest
// came later), so the pending acks go out as one multiple ack. One broker
// limit remains: RabbitMQ's quorum-queue client (measured with 3.10; 4.x
// has the same limit) holds settlements back once 32 are in flight and
// drops the held ones when the channel closes. So after a hard stop that
// left handlers running, if more than 32 deliveries above them were settled
// in the last moments, some of those are redelivered (and absorbed by the
// idempotency claims) instead of acked.
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
//
// Producers' "oncely-" headers are not trusted. Retry copies come back to
// the source queue from the retry queues, so the queue does not tell them
// from a producer's messages; user_id does: every copy the Source publishes
// carries user_id = the URL's login, which the broker checks against the
// publishing connection's login. A delivery whose user_id is not this login
// has its "oncely-" headers moved aside (consumer.DistrustHeaders) and starts
// at attempt 1. A producer sharing the consumer's login is trusted: give
// producers logins of their own. x-death proves nothing (a publisher can
// set it). Retry copies published by a version of oncely before this rule
// carry no user_id: they start again at attempt 1 with fresh failure
// context.
package rabbitmq
