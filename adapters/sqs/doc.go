// Package sqs is the Amazon SQS adapter of oncely, on aws-sdk-go-v2: a
// consumer.Source (with consumer.BacklogReporter) whose deliveries implement
// consumer.Delivery and consumer.Leased.
//
// # Receiving
//
// Receive long-polls (WaitTimeSeconds, default 5) with batches of up to 10
// and at most Config.Receivers receive calls in flight, one while the queue
// is idle (the last call came back empty). It makes a call only for room the
// consumer runtime asked for, so no message is fetched while in-flight work
// is at its bound. The message ID comes from the message-id
// attribute (Config.IDAttribute); a message without it gets an empty ID and
// is dead-lettered by the runtime with reason missing-id. Message.Attempt is
// SQS's ApproximateReceiveCount, requested both as MessageSystemAttributeNames
// (real SQS) and as the older AttributeNames (which local-aws-sqs reads),
// counted from the oncely-attempt attribute of a copy Close put back (see
// Close below): receives that ended in a crash count, clean closes do not
// (except on FIFO queues, see Closing). On FIFO queues Message.Key is the MessageGroupId, so the runtime keeps one lane
// per group; elsewhere it is the message-key attribute, or else the message ID.
//
// # Leases
//
// While a delivery is unsettled its visibility is extended at 70 % of the
// visibility timeout (earlier for short timeouts, so an extension has two
// seconds to reach SQS, but never before half the window), by
// ChangeMessageVisibilityBatch calls shared by deliveries due together, up to
// Config.MaxExtension from the receive. An extension SQS did not answer (a
// refused or broken connection, a timeout) is tried again, up to once a
// second, while the window leaves more than two seconds, so a short outage
// keeps the lease. When SQS refuses an extension, when the unanswered ones
// run out of window, when one is confirmed only after the window it extends
// may have ended, or when the cap is reached and the last window ends, Lost
// is closed: the runtime cancels the handler and does not settle, and SQS
// redelivers the message; a Retry of that delivery fails without changing
// the visibility. A delivery whose lease ends before the runtime took it is
// dropped, not handed out.
//
// # Settling
//
//   - Ack deletes the message. Concurrent acks share DeleteMessageBatch calls
//     (10 entries, or what arrived within Config.AckFlushInterval); a failed
//     entry is tried again, a sender fault (such as an expired receipt
//     handle) is returned at once as *DeleteError, and Ack returns only after
//     its own entry was deleted.
//   - Retry changes the message's visibility to the delay, rounded up to whole
//     seconds so it is never early. SQS cannot change a message's attributes,
//     so the failure context (oncely-attempt, oncely-error, …) of a retry is
//     kept in the memory of the Source that retried it and added to the
//     message's headers when that Source receives it again; another process
//     receiving it sees the original attributes, and Attempt from the receive
//     count. The dead-letter copy carries the context of its own failure,
//     plus the earlier hops' "original" headers when they were in memory.
//     On a FIFO queue SQS holds the message's group back until the retried
//     message is visible again and delivers it first, but messages of the
//     group received in the same batch are handled before it.
//     SQS counts its 12-hour visibility limit from the receive, so the
//     longest retry delay (Capabilities.MaxDelay) is 12h − MaxExtension and
//     consumer.New refuses a retry policy that could exceed it; the runtime
//     caps RetryAfter delays to it, and Retry itself caps a longer delay to
//     what is left of the 12 hours, so it never sends a visibility SQS
//     refuses.
//   - DeadLetter sends a copy to the dead-letter queue (default
//     "<queue>-<consumer>-dlq", ".fifo" for FIFO sources): body and
//     attributes unchanged, every other header packed into the one JSON
//     attribute FailureAttribute, so the copy never exceeds SQS's ten message
//     attributes. Only after SQS confirmed the send is the original deleted;
//     if the send fails nothing is deleted and the message comes back. On
//     FIFO queues the copy keeps the MessageGroupId and is deduplicated by
//     the original's SQS message ID. Headers unpacks FailureAttribute for
//     readers of the dead-letter queue. The copy is made to fit SQS's size
//     limit (Config.MaxMessageSize, by default the queue's
//     MaximumMessageSize, counted as SQS counts it) before it is sent, with
//     consumer.FitCopy: the stack goes first, then the error is cut, then
//     the body is replaced by the oncely-body-removed-size and
//     oncely-body-removed-sha256 attributes, then the producer's largest
//     attributes are removed (listed in oncely-headers-removed; the ID and
//     key attributes stay); a copy SQS refuses as invalid
//     anyway is trimmed one step further and sent again. The delivery
//     reports a trimmed copy (consumer.CopyTrimmer), and one that cannot fit
//     is an error wrapping consumer.ErrCopyRefused.
//
// # Closing
//
// Close stops intake and waits for the receive calls in flight (up to
// WaitTimeSeconds) instead of cancelling them: SQS keeps serving a long poll
// whose caller went away, and the messages it took would stay invisible for
// a whole visibility timeout with their receive count raised. So
// WaitTimeSeconds is the shutdown budget: on an idle queue Close waits for
// the one call in flight, at most WaitTimeSeconds (5 s by default; the calls
// run on while the runtime drains its handlers, so Stop adds only what is
// left of them), and on a busy queue a call ends as soon as it has messages.
// A longer wait saves requests only while the queue is idle (one request
// per WaitTimeSeconds); a shorter one makes shutdown faster. Then it sends
// the pending deletes and gives back every unsettled delivery, including
// what those calls received, so another consumer gets it at once. On a
// standard queue each is put back as a copy carrying its failure context and
// an oncely-attempt attribute with its Attempt (the next one when a handler
// ran and its settlement failed), and the original is deleted once SQS
// confirmed the copy: a clean close never raises Attempt. The copy goes to
// the back of the queue and gets a new SQS message ID and sent timestamp. A
// copy too large for the limit, one whose send fails, and every delivery of
// a FIFO queue (where a copy would go to the back of its message group) are
// released by visibility 0 instead, and their next receive counts once more.
//
// On a FIFO queue a clean close can therefore raise Attempt, for the
// deliveries the Source held unhandled at Close (received by a call in
// flight, or not yet handed to the runtime; what the runtime took it
// handles and settles before it closes the Source). Message.Attempt there is
// ApproximateReceiveCount, which SQS raises on every receive and offers no
// way to lower or to annotate (a message's attributes cannot change), and
// the one way to restart it, a copy, would put the message behind the rest
// of its group: order is what a FIFO queue is for. Leave room in
// MaxAttempts for the deploys a message may live through on a FIFO queue.
// A lease given up after a failed extension is released at once too, when
// its window is still open.
//
// Source implements consumer.Prober: one GetQueueAttributes call on the
// source queue.
//
// # Start-up checks
//
// New validates Config, resolves (or, with CreateQueues, creates) both
// queues, and reads the source queue's attributes. When the queue has a
// RedrivePolicy, its maxReceiveCount must exceed Config.MaxAttempts: otherwise
// SQS would move a failing message to its own dead-letter queue, without
// failure context, before the consumer's last attempt.
//
// # Testing against local-aws-sqs
//
// The tests run against the local-aws-sqs npm emulator (2.0.2), started by
// scripts/sqs-emulator.sh. The adapter follows real SQS where the emulator
// differs:
//
//   - ChangeMessageVisibility increments ApproximateReceiveCount in the
//     emulator, not in SQS. The script patches this one line in memory when
//     starting the emulator, or every renewal would count as an attempt.
//   - The emulator reads only the deprecated AttributeNames of
//     ReceiveMessage; the adapter sends both forms.
//   - The emulator does not hold a FIFO message group back while one of its
//     messages is in flight, so concurrent receive calls could split a group
//     in either order; the FIFO test uses one receiver.
//   - The emulator answers a long poll only when its WaitTimeSeconds has
//     passed, also when messages arrived earlier (SQS answers as soon as
//     there are), so there Close always waits out the polls in flight.
//   - The emulator deduplicates FIFO messages only against messages still
//     in the queue, not for five minutes after a deletion as SQS does.
//   - The emulator's ApproximateNumberOfMessages counts in-flight messages
//     too; SQS's counts only visible ones (Backlog adds the in-flight count).
//
// Producers' "oncely-" headers are not trusted, as far as SQS allows: every
// message arrives on the source queue, the copies Close puts back too, and
// nothing a producer cannot set tells them apart. Every "oncely-" header but
// oncely-attempt is moved aside on receive (consumer.DistrustHeaders), so the
// failure context a dead letter shows is the runtime's; oncely-attempt is
// kept because Close's copies need it, so a producer can shorten a message's
// retries with it (the message is dead-lettered, never lost).
package sqs
