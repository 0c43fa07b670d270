// Package nats is the oncely adapter for NATS JetStream (nats.go's jetstream
// package): a consumer.Source with a durable pull consumer per consumer name.
//
// # Streams and subjects
//
// Producers publish to the source subject (e.g. "payments"), held by the
// stream StreamName(source) ("." becomes "_"). Each consumer name has:
//
//   - a durable pull consumer on the source stream, explicit acks;
//   - a retry stream with subject "<source>.<consumer>.retry" and a durable
//     consumer of the same name on it;
//   - a dead-letter stream with subject "<source>.<consumer>.dlq" (stream
//     "<source>_<consumer>_dlq") holding the full message (ID, key, body,
//     every header) with oncely's failure headers.
//
// A pair whose source or consumer holds '_' has its retry and dead-letter
// streams escaped (StreamName), so no two pairs share a stream.
//
// New creates what is missing. Each consumer name reads every message of
// the source (Capabilities.FanOut), and its retries never reach another name.
//
// # Messages
//
// The ID is the message-id header (else Nats-Msg-Id), the ordering key the
// header Config.KeyHeader ("message-key"); Message.Attempt comes from
// oncely's attempt header, never from the server's delivery count, which
// also rises when a Source closes with deliveries unsettled. Publisher never
// sets Nats-Msg-Id: the stream's duplicate window would drop retried and
// redriven copies, which keep the ID.
//
// # Settlement
//
// Ack sends an ack without waiting for the server's reply: a lost ack only
// causes a redelivery, which the idempotency claim absorbs. Retry and
// DeadLetter publish their copy and wait for the stream's PubAck before the
// original is acked; a refused copy leaves the original unsettled. A retried
// copy delivered before its oncely-retry-not-before is nak'd with the rest of
// the delay (NakWithDelay; a plain Nak would ignore any delay), so delays of
// any length are honoured.
//
// # Leases, backpressure, limits
//
// A delivery is held from the moment it leaves the pull buffer, and while
// held the Source sends an in-progress ack every AckWait/3, so a long
// handler keeps its lease. A message waiting in a pull buffer cannot be
// renewed: when its lease runs out there and the server delivers it again,
// the Source keeps one delivery per stream sequence (the later delivery of
// a held message takes its place) and acks, without handing it out, a
// later delivery of a message it has just settled. Two pull subscriptions
// (jetstream Consume: source and retry stream) together hold at most
// Config.Prefetch (default 256) messages ahead of Receive, refilled as
// Receive takes them (see Config.Prefetch for what a message waiting in a
// pull buffer, not yet held, costs), and the
// server hands the source stream's durable consumer at most MaxAckPending
// unacknowledged messages across all its Sources. The retry stream's
// consumer has no MaxAckPending: a retried copy delivered before it is due
// is nak'd with the rest of its delay and stays unacknowledged on the
// server meanwhile, so under a limit copies waiting out long delays would
// hold back every copy due sooner.
//
// The delivery limit, Config.MaxDeliver (default 100, always bounded), is
// the Source's, not the server's: the durable consumers are created, and
// those made earlier with a server-side MaxDeliver updated, with none. A
// message delivered for the MaxDeliver-th time (the server's count) is
// dead-lettered with reason ReasonDeliveryLimit instead of being handed
// out, so a message that crashes its consumers ends in the dead-letter
// stream. The copy is tried, with backoff, until its PubAck arrives, and
// only then is the original acked; a Source that closes (or crashes)
// before that leaves the message unacked, and the server, with no limit of
// its own, delivers it again: to a Source that dead-letters it in turn.
// Replicas configured with different limits each apply theirs, and none
// loses a message: a server-side limit would drop the message after its
// last delivery however that delivery ended. Close drains the pull
// subscriptions, waits for their last pull requests to expire
// (Config.PollWait: a nak sent while one is outstanding would be
// redelivered to it and stranded until AckWait), naks every delivery
// still held (they come back at once), flushes the connection and closes
// it.
//
// Producers' "oncely-" headers are not trusted: a message on the source
// subject has them moved aside (consumer.DistrustHeaders) and starts at
// attempt 1, whatever its headers say (a forged oncely-retry-not-before
// would otherwise hold it back); only the retry subject carries oncely's
// copies.
package nats
