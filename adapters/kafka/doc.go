// Package kafka is oncely's Kafka adapter, built on franz-go: a
// consumer.Source that reads a topic as a consumer group and commits an
// offset only after the record and every record before it in its partition
// were settled.
//
// # Delivery
//
// The Source joins Config.Group with auto-commit disabled and rebalances
// blocked while a poll is turned into deliveries (franz-go's
// BlockRebalanceOnPoll, released with AllowRebalance after every poll). Each
// Receive polls at most what the runtime asked for, so the runtime's
// MaxInFlight is the backpressure; a partition with more than
// MaxPartitionInFlight records outstanding is additionally paused.
//
// Messages carry the record's key, value and headers (as strings), the
// topic as Source, partition, offset and timestamp. The ID comes from the
// message-id header (CloudEvents ce_id is accepted; DeriveID uses
// topic/partition/offset), Attempt from the oncely-attempt header (1 when
// absent). A record without headers, or whose only header is the one its
// ID came from (as Client.Publish writes it), has nil Headers, which saves
// a map per record; a record with any other header keeps all of them, the
// ID header included. One poll's keys and header values share one string
// allocation, as its values share franz-go's fetch buffer.
//
// # Commits and rebalances
//
// Per partition the Source tracks the records it handed out and commits the
// first unsettled offset: every CommitInterval, synchronously when
// partitions are revoked (after waiting up to RevokeTimeout for their
// deliveries to settle) and on Close. Commits of partitions no longer owned
// are never sent. Revoked and lost partitions are resumed (franz-go keeps
// pause state across rebalances) and their remaining deliveries report
// consumer.Leased.Lost, so the runtime cancels their handlers and does not
// settle them; the next owner gets the records again and the idempotency
// store absorbs the duplicates. Commit errors that follow a lost membership
// (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS) are logged
// as expected.
//
// # Retries and dead letters
//
// With RetryTopics (the default) a retry produces a copy to
// "<topic>.<group>.retry.<tier>" (RetryTopic) and a dead letter to
// "<topic>.<group>.dlq" (DeadLetterTopic; a group with other characters
// than letters, digits and '-' is escaped, so no two pairs share a topic,
// and names Kafka would refuse are refused by New); both wait for the broker's
// acknowledgement before the original counts as settled. The Source
// consumes its own retry topics in the same group: a copy is not delivered
// before its oncely-retry-not-before header; its partition is paused and
// Receive wakes at the due time (nothing sleeps in the poll loop). A
// retried copy's Message.Source is the retry topic; the original topic is
// in oncely-original-source. Retry topics give up key order for the retried
// record; RetryInPlace keeps it at the cost of stalling the partition.
//
// A tier's record still not due once its tier's delay passed since it was
// produced hops: it is produced again to the end of its tier, and its offset
// is committed once the broker acknowledged that copy, so one far-future
// retry never holds back the records behind it and any delay is honoured
// (Capabilities.MaxDelay is ClaimRetention). Retry and dead-letter copies
// are fitted to the smaller of the producer's batch limit and the copy
// topic's max.message.bytes (consumer.FitCopy; a dead letter may lose its
// body, then the producer's largest headers but never Config.IDHeaders, a
// retry copy that cannot fit is refused with consumer.ErrCopyRefused),
// and deliveries report trimmed copies (consumer.CopyTrimmer). Source.Probe
// (consumer.Prober) asks the brokers for the topics' metadata.
//
// New creates the source and dead-letter topics when absent
// (TopicPartitions, ReplicationFactor), and fails with ErrTopicCreation when
// the broker refuses. Retry topics are created only as far as a retry
// policy reaches: New creates the tiers the default policy reaches (1s and
// 10s of the default tiers), so the group's first assignment holds them;
// consumer.New tells the Source the longest delay its own policy asks for
// (consumer.TierLimiter), and the first Receive creates the tiers up to
// the first one not shorter than it (retry.Tiers.Upto; all of them for a
// Source no consumer.New told). A longer delay (a RetryAfter) goes to the
// largest and hops there until due.
// Every retry topic of the pair that exists when New runs, or that another
// replica creates later (found within 10 s), is consumed too, whichever
// configuration created it, so a tier a replica with a longer policy
// created is still drained after that replica left.
//
// # Operations and development
//
// Source.Backlog reports lag per partition (end offset minus committed) and
// the dead-letter topic's depth. Client does the work around a consumer
// without joining its group: Publish (IDs in the message-id header),
// CreateTopic, Backlog, and ReadDeadLetters, whose reader lists dead
// letters and records the ones a redrive or purge removed (RedriveGroup). The package links no fake
// broker: `oncely dev kafka` runs one for local development.
//
// Producers' "oncely-" headers are not trusted: a record of the source topic
// is a first arrival, whose "oncely-" headers are moved aside
// (consumer.DistrustHeaders) before the runtime sees it, so a producer sets
// no attempt count, due time or failure context. Only the retry topics (and
// in-place retries, whose headers the runtime wrote) carry oncely's; a
// producer allowed to write to a retry or dead-letter topic is trusted, so
// keep those topics' write ACLs to the consumer's principal.
package kafka
