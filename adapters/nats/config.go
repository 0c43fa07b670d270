package nats

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/oncely/oncely/adapters/internal/startpos"
)

// Defaults of Config.
const (
	// KeyHeaderDefault is the header carrying the ordering key.
	KeyHeaderDefault = "message-key"
	// PrefetchDefault is the default Config.Prefetch.
	PrefetchDefault = 256
	// AckWaitDefault is the default Config.AckWait.
	AckWaitDefault = 30 * time.Second
	// MaxDeliverDefault is the default Config.MaxDeliver.
	MaxDeliverDefault = 100
	// MaxAckPendingDefault is the default Config.MaxAckPending.
	MaxAckPendingDefault = 1000
	// PollWaitDefault is the default Config.PollWait.
	PollWaitDefault = time.Second
	// RPCTimeoutDefault is the default Config.RPCTimeout.
	RPCTimeoutDefault = 10 * time.Second
)

// Config configures a Source. Source, Consumer and URL are required; every
// other field has a documented zero-value default.
type Config struct {
	// URL is the server, nats://host:port (tls://host:port for TLS); a
	// comma-separated list names several servers of one cluster.
	URL string

	// TLS, when set, is used for the connection. Default: none (unless the
	// URL is tls://, then the system's roots).
	TLS *tls.Config

	// Source is the subject producers publish to; its stream is named by
	// StreamName(Source). Required.
	Source string

	// Consumer is the durable consumer name, which also names the retry
	// and dead-letter streams. Required; no '.', '*', '>' or spaces.
	Consumer string

	// KeyHeader is the header carrying the ordering key. Default
	// KeyHeaderDefault ("message-key").
	KeyHeader string

	// Prefetch is the most messages the Source holds ahead of Receive,
	// over its two pull subscriptions together: the source stream's
	// gets seven eighths, the retry stream's an eighth (at least 2), each
	// its pull buffer (PullMaxMessages) plus a few handed over to wait
	// for Receive. Throughput grows with it (JetStream serves a pull
	// consumer in pulls of up to its buffer). The runtime's MaxInFlight
	// must be at least Capabilities().Prefetch, which is this (an unset
	// MaxInFlight defaults to it). At least 4.
	//
	// Default PrefetchDefault (256; nats.go's Consume buffers 500). What
	// it costs: memory for up to Prefetch messages ahead of Receive (and
	// as many in the runtime), and time in the pull buffer, where a
	// message is not yet held and its lease is not renewed: one waits
	// there about the source stream's pull buffer (196 at the default)
	// divided by the handlers' rate, so handlers slower together than
	// about 7 messages a second (196 per AckWait) see leases run out in
	// the buffer; the server then delivers those messages again and the
	// Source keeps one delivery each (see the package documentation),
	// and a lower Prefetch avoids it. With the runtime's defaults a
	// Source holds about 2 × Prefetch unacknowledged deliveries of the
	// source stream (ahead of Receive and in the runtime), so two Sources
	// fit the default MaxAckPending (1000); more share what is left.
	Prefetch int

	// AckWait is the consumer's lease on a delivery; the Source renews it
	// (an in-progress ack) every AckWait/3 while the delivery is held.
	// Default AckWaitDefault (30s).
	AckWait time.Duration

	// MaxDeliver is the Source's delivery limit: a message delivered for
	// the MaxDeliver-th time (the server's count, which also rises when a
	// Source closes or crashes with it unsettled) is dead-lettered with
	// reason ReasonDeliveryLimit instead of being handed out, so a message
	// that keeps crashing consumers ends in the dead-letter stream. A
	// retried copy's first delivery, which comes before it is due and is
	// nak'd with the rest of its delay, is not counted. The limit is
	// enforced by the Source alone: the durable consumers have no
	// server-side limit (New lifts one set before), so the server delivers
	// again whatever was not acked — a last delivery whose dead-letter
	// copy was refused (the Source keeps trying it, with backoff, until it
	// is confirmed or the Source closes), given back by Close, left by a
	// crash, or handed out by a replica configured with a higher limit.
	// The original is acked only after the copy's PubAck. At least 2.
	// Default MaxDeliverDefault (100).
	MaxDeliver int

	// MaxAckPending is the most unacknowledged deliveries the server hands
	// out to the source stream's consumer (all its Sources together):
	// backpressure across replicas. The retry stream's consumer has no
	// such limit: a retried copy delivered early is nak'd with the rest of
	// its delay and counts as unacknowledged until then, so under a limit
	// copies waiting out long delays would hold back copies due sooner.
	// Default MaxAckPendingDefault (1000); it must be at least Prefetch.
	MaxAckPending int

	// MaxMessageSize is the largest retry or dead-letter copy the Source
	// publishes, in bytes: copies over it are trimmed first
	// (consumer.FitCopy). Default 0: the server's max_payload, which also
	// caps a larger value.
	MaxMessageSize int

	// PollWait is how long one pull request waits for messages (at least
	// 1s, JetStream's least expiry); Close waits this long for the last
	// ones to expire. Default PollWaitDefault (1s).
	PollWait time.Duration

	// RPCTimeout bounds each JetStream API call and copy publish that has
	// no deadline of its own. Default RPCTimeoutDefault (10s).
	RPCTimeout time.Duration

	// Start is where the durable consumer of the source stream starts when
	// New creates it: "earliest" (the oldest message the stream keeps),
	// "latest" (only messages stored after its creation) or an RFC 3339
	// time (the first message stored at or after it; the oldest kept when
	// the time is before the stream's retention). A consumer that exists
	// keeps its position (use oncely replay to move it); the retry stream's
	// consumer, and one recreated after it vanished, start at the oldest
	// message. Default "earliest".
	Start string

	// Replicas is the replica count of the streams New and the Source
	// create when absent (source, retry and dead-letter streams): 3 on a
	// three-server cluster keeps them through the loss of a server. A
	// stream that exists keeps its replica count (change it with the nats
	// CLI). More replicas than the cluster has servers (any above 1 on a
	// single server) fail New. Default 0: one replica.
	Replicas int

	// Logger receives the adapter's logs. Default slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.KeyHeader == "" {
		c.KeyHeader = KeyHeaderDefault
	}
	if c.Prefetch == 0 {
		c.Prefetch = PrefetchDefault
	}
	if c.AckWait == 0 {
		c.AckWait = AckWaitDefault
	}
	if c.MaxDeliver == 0 {
		c.MaxDeliver = MaxDeliverDefault
	}
	if c.MaxAckPending == 0 {
		c.MaxAckPending = max(MaxAckPendingDefault, c.Prefetch)
	}
	if c.PollWait == 0 {
		c.PollWait = PollWaitDefault
	}
	if c.RPCTimeout == 0 {
		c.RPCTimeout = RPCTimeoutDefault
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// validate reports every problem of a defaulted Config at once.
func (c Config) validate() error {
	var errs []error
	if c.URL == "" {
		errs = append(errs, errors.New("config.URL is required"))
	}
	if err := checkSubject("config.Source", c.Source); err != nil {
		errs = append(errs, err)
	}
	if c.Consumer == "" || strings.ContainsAny(c.Consumer, ".*> \t\r\n") {
		errs = append(errs, fmt.Errorf("config.Consumer %q: want a non-empty name without '.', '*', '>' or whitespace", c.Consumer))
	}
	if c.Prefetch < 4 {
		errs = append(errs, fmt.Errorf("config.Prefetch %d: want at least 4 (2 for each of the two pull subscriptions)", c.Prefetch))
	}
	if c.AckWait < time.Second {
		errs = append(errs, fmt.Errorf("config.AckWait %s: want at least 1s", c.AckWait))
	}
	if c.MaxDeliver < 2 {
		errs = append(errs, fmt.Errorf("config.MaxDeliver %d: want at least 2 (the last delivery is dead-lettered; JetStream's unlimited -1 is refused: a poison message would come back forever)", c.MaxDeliver))
	}
	if c.MaxAckPending < c.Prefetch {
		errs = append(errs, fmt.Errorf("config.MaxAckPending %d is below config.Prefetch %d", c.MaxAckPending, c.Prefetch))
	}
	if c.PollWait < time.Second || c.PollWait >= c.AckWait {
		errs = append(errs, fmt.Errorf("config.PollWait %s: want at least 1s (JetStream's least pull expiry) and below AckWait (%s)", c.PollWait, c.AckWait))
	}
	if c.MaxMessageSize < 0 {
		errs = append(errs, fmt.Errorf("config.MaxMessageSize %d: want >= 0 (0: the server's max_payload)", c.MaxMessageSize))
	}
	if _, err := startpos.Parse(c.Start); err != nil {
		errs = append(errs, fmt.Errorf("config.Start: %w", err))
	}
	if c.Replicas < 0 {
		errs = append(errs, fmt.Errorf("config.Replicas %d: want >= 0 (0: one replica)", c.Replicas))
	}
	if c.RPCTimeout < 0 {
		errs = append(errs, fmt.Errorf("config.RPCTimeout %s: want > 0", c.RPCTimeout))
	}
	if len(errs) > 0 {
		return fmt.Errorf("nats: invalid config: %w", errors.Join(errs...))
	}
	return nil
}

// checkSubject accepts a literal subject: tokens separated by '.', none
// empty, no wildcards or whitespace.
func checkSubject(what, s string) error {
	if s == "" || strings.ContainsAny(s, "*> \t\r\n") || strings.HasPrefix(s, ".") || strings.HasSuffix(s, ".") || strings.Contains(s, "..") {
		return fmt.Errorf("%s %q: want a literal subject (tokens separated by '.', no wildcards or whitespace)", what, s)
	}
	return nil
}
