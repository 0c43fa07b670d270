// Package redis is the Redis Streams adapter (github.com/redis/go-redis/v9;
// Redis 7.0 or newer: one server, a primary that Sentinels watch, or a
// Redis Cluster).
//
// # Keys
//
// For a source stream S and consumer name C:
//
//	S              the source stream; C is a consumer group on it (created at ID 0)
//	S.C.delayed    sorted set of retry copies not yet due (score: due time, Redis's clock)
//	S.C.retry      stream of due retry copies and redriven dead letters (group C)
//	S.C.dlq        the dead-letter stream
//	S.C.live       sorted set of the running Sources' heartbeats (score: expiry, Redis's clock; see LiveKey)
//
// A consumer name holding '.' is escaped in these keys (see DeadLetterStream),
// so no two (stream, consumer) pairs share a key.
//
// # Redis Cluster
//
// A settlement script touches S and its derived keys at once, which Redis
// Cluster allows only when they share a hash slot. Each derived key begins
// with S, so a stream named with a hash tag ("{orders}") puts all of them
// in the stream's slot; on a cluster New refuses a stream without one (see
// Config.Stream). The names are the same on one server, so existing
// untagged deployments keep their keys, and a deployment named with a tag
// moves to a cluster unchanged.
//
// Every consumer name is its own group, so two names of one source each get
// every entry (Capabilities.FanOut). Retry copies and redriven dead letters
// go to S.C.retry, which only group C reads, never back to S.
//
// An entry's message ID is its "message-id" field, its ordering key
// "message-key" (none when absent: unkeyed entries of a stream are
// ordered per stream, as consumer.Ordering says), its body "body"; every other field is a
// header (Config.IDField, KeyField, BodyField rename them). Those three
// fields are not in Message.Headers (Message.Header("message-id") is ""; read
// Message.ID and Message.Key), and an entry with no other field has nil
// Headers.
//
// # Delivery and settlement
//
// Each Source is one consumer of the group with a name unique to it
// (host-pid-random). Receive reads new entries with XREADGROUP and never
// more than it was asked for; nothing is fetched outside Receive. Each read
// also lists, in the same round trip, the Source's own pending entries
// above the last one it received: entries a read took whose reply was lost
// (a connection cut under it, a client retry) are delivered then, with
// Attempt 1 and before the entries read after them, so per-key order holds
// (see orphans.go). Ack is
// XACK after the handler's effect committed, queued and written by one
// goroutine in pipelines (Close writes what is queued; an ack lost with the
// process leaves its entry pending, reclaimed after the lease and absorbed
// by the idempotency claim); a retry stream entry is also deleted (XDEL),
// so S.C.retry holds only unsettled copies.
//
// Retry and DeadLetter each run one Lua script that writes the copy first
// (ZADD to S.C.delayed, XADD to S.C.dlq) and then XACKs the original. Redis
// runs a script atomically, so a crash of the consumer never separates the
// two; a script failing half-way can only leave the copy and the original
// (a duplicate the idempotency claim absorbs), never neither. Due retry
// copies are moved from the sorted set to S.C.retry (XADD and ZREM in one
// script) by the next Receive of any Source of the group, and a Source
// blocking in XREADGROUP wakes for the next due time, so a retry delays only
// its own message, never the stream. The scripts skip an entry no longer
// pending with their consumer (its lease ended and another Source reclaimed
// it): that Source settles it.
//
// # Leases, crashes and attempts
//
// An entry pending with a consumer for Config.Lease (default 30s) is
// reclaimed by another Source with XAUTOCLAIM; Redis's delivery counter
// (XPENDING) rises with each claim, so a crash counts as an attempt.
// Message.Attempt is the counter plus the oncely-attempt header of a retry
// copy, less one. A Source renews the lease of its unsettled deliveries
// every Lease/3 (XCLAIM … JUSTID, which leaves the counter alone); when an
// entry was reclaimed anyway, or renewals failed for two thirds of the
// lease, the deliveries received in that period lose their lease together
// (consumer.LeaseContexter: the runtime cancels their handlers and settles
// none of them), and the Source hands those still pending with it back at
// once, as Close does (no longer renewed, their counter kept): they wait
// for the next reclaim of any Source, never for this Source's Close.
// Close hands its unsettled entries back with their lease ended and their
// counter lowered by one (XCLAIM IDLE … RETRYCOUNT … JUSTID), so the next
// Source takes them at once and a clean close never raises Attempt.
//
// A pending entry deleted from its stream (XDEL, trimming) is a ghost:
// XAUTOCLAIM drops it and reports it deleted, whatever its idle time, so
// any Source's reclaim may find it; that Source acks it, counts it
// (Stats.Ghosts) and logs it, and it is never delivered.
//
// Consumers idle for Config.ReapIdle (default 1h) holding nothing pending
// are deleted (XGROUP DELCONSUMER), checked and deleted in one script so a
// consumer with pending entries is never removed; a Source deletes its own
// consumer on Close when it holds nothing pending.
//
// # A vanished group
//
// When the stream or the group is gone (Redis restarted without
// persistence, the stream deleted, XGROUP DESTROY), any call of the Source
// that meets Redis's NOGROUP reply (a read, a reclaim, a renewal, a
// settlement script) creates the group again (at ID 0, MKSTREAM) and
// intake goes on by itself; the deliveries that were pending with the old
// group lose their lease.
//
// # Trimming
//
// Redis keeps stream entries after every group acked them. With
// Config.TrimInterval set, a Source trims S (XTRIM MINID) below the oldest
// entry any group of S still needs (its oldest pending entry, else its last
// delivered one), so an entry some group has not processed is never
// dropped. Without it (the default) trim S yourself; XADD MAXLEN drops
// entries whether or not they were processed, and the ghosts it leaves
// are acked as described above, their messages lost. A group created later
// at ID 0 does not see what was trimmed.
//
// # Backlog
//
// Backlog reports one line for S: the entries of group C not yet delivered
// plus those pending (XINFO GROUPS lag + pending) plus the retry copies
// waiting (S.C.retry and S.C.delayed), and the dead-letter stream's length.
// The metrics package polls it for oncely_backlog_messages and
// oncely_dead_letter_messages (the lag and depth gauges).
//
// Producers' "oncely-" headers are not trusted: an entry of the source stream
// has them moved aside (consumer.DistrustHeaders) and its attempt is Redis's
// delivery count alone; only the consumer's retry stream carries oncely's
// copies (retries and redrives).
package redis
