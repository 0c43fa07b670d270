package rabbitmq

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/oncely/oncely/internal/redact"
	"github.com/oncely/oncely/retry"
)

// Defaults applied to zero fields of Config.
const (
	// PrefetchDefault is the per-consumer prefetch (unacknowledged deliveries
	// the broker may push ahead): 128, the consumer runtime's default
	// MaxInFlight (8 × its default Concurrency of 16). The runtime refuses a
	// MaxInFlight below the prefetch (Capabilities.Prefetch), because
	// deliveries it has no room for would sit unhandled in the client and
	// return to the queue on every close; with a Concurrency below 16, lower
	// the prefetch to 8 × Concurrency or raise MaxInFlight. A smaller
	// prefetch costs throughput (docs/benchmarks.md measures it).
	PrefetchDefault = 128
	// DeliveryLimitDefault is the quorum queue's x-delivery-limit, a guard
	// against crash loops: after this many deliveries returned unacknowledged
	// (the broker counts every channel closed with the message unacked: a
	// crash, a lost connection, and also a clean shutdown that returns
	// prefetched deliveries no handler saw) the broker dead-letters the
	// message into the dead-letter queue (never drops it). It is high because
	// clean closes count too, and it is no attempt count (Message.Attempt
	// comes from oncely's header alone); the dead-letter tools name such a
	// message's reason "delivery-limit" (ReasonDeliveryLimit).
	DeliveryLimitDefault = 100
	// legacyDeliveryLimit is the DeliveryLimitDefault of earlier versions;
	// their source queues are accepted with it (see topology.declareAll).
	legacyDeliveryLimit = 20
	// MaxMessageSizeDefault is the largest retry or dead-letter copy
	// published: RabbitMQ's own default max_message_size (128 MiB since 3.8).
	MaxMessageSizeDefault = 128 << 20
	// KeyHeaderDefault is the header carrying the ordering key.
	KeyHeaderDefault = "message-key"
	// DialTimeoutDefault bounds a TCP connect.
	DialTimeoutDefault = 15 * time.Second
	// HandshakeTimeoutDefault bounds what follows the TCP connect: the TLS
	// handshake, the AMQP handshake, the login and opening the vhost.
	HandshakeTimeoutDefault = 10 * time.Second
	// RPCTimeoutDefault bounds one channel RPC (open, declare, qos, consume,
	// cancel, close), which amqp091-go would otherwise wait for forever.
	RPCTimeoutDefault = 15 * time.Second
	// HeartbeatDefault is the AMQP heartbeat interval asked of the broker.
	HeartbeatDefault = 10 * time.Second

	// maxQuorumPrefetch is the prefetch quorum queues cap silently.
	maxQuorumPrefetch = 2000
	// maxShortString is AMQP's limit for short strings: queue names and the
	// message_id property.
	maxShortString = 255
	// dlqDeliveryLimit is the dead-letter queue's x-delivery-limit: high,
	// so browsing dead letters (get, then requeue) never hits RabbitMQ 4's
	// default limit of 20, which would drop them.
	dlqDeliveryLimit = 1_000_000
)

// QueueType is the RabbitMQ queue type of the source, retry and dead-letter
// queues.
type QueueType string

// Queue types.
const (
	// Quorum queues (the default) are replicated, count deliveries in
	// x-delivery-count, and dead-letter at-least-once.
	Quorum QueueType = "quorum"
	// Classic queues count no deliveries (Attempt then comes from the
	// oncely-attempt header alone) and dead-letter at-most-once inside the
	// broker, which matters for the retry queues in a cluster.
	Classic QueueType = "classic"
)

// Config configures a Source. URL, Queue and Consumer are required; every
// other zero field means the documented default. New validates it and
// reports every problem at once.
type Config struct {
	// URL is the broker, amqp://user:pass@host:port/vhost (amqps:// for TLS).
	// A cluster's nodes may be listed in one URL,
	// amqp://user:pass@h1:5672,h2:5673,h3:5674/vhost: every host shares the
	// user, password, vhost and TLS settings; a connection dials them in
	// turn, starting after the node of the last connection, so a connection
	// lost with its node moves to another node (see the package doc).
	URL string

	// TLS configures amqps:// connections: the CA (RootCAs), a client
	// certificate, the server name (defaults to the URL's host). Nil means
	// amqp091-go's default for amqps://: the system's roots, or the URL's
	// own cacertfile, certfile and keyfile parameters. Setting it for an
	// amqp:// URL is an error: it would not be used.
	TLS *tls.Config

	// Queue is the source queue. Retried copies come back to it through the
	// per-tier retry queues. One queue feeds one logical consumer: several
	// processes with the same Consumer may share it, consumers with other
	// names need queues of their own (bound to the same exchange).
	Queue string

	// Consumer is the consumer name; it must equal consumer.Config.Name. It
	// names the retry queues <Queue>.<Consumer>.retry.<tier> and the
	// dead-letter queue <Queue>.<Consumer>.dlq (RetryQueue, DeadLetterQueue).
	Consumer string

	// Prefetch is the most unacknowledged deliveries the broker pushes to
	// this consumer (basic.qos, per consumer), reported as
	// Capabilities.Prefetch: the consumer's MaxInFlight must be at least
	// this. Defaults to PrefetchDefault (128). AMQP's prefetch 0 means unbounded (quorum queues then cap it at
	// 2,000 without telling anyone), so it cannot be asked for: 0 here means
	// the default, and negative values are refused. Quorum queues accept at
	// most 2,000.
	Prefetch int

	// QueueType is the type of the queues the adapter declares. Defaults to
	// Quorum.
	QueueType QueueType

	// DeliveryLimit is the source quorum queue's x-delivery-limit. Defaults
	// to DeliveryLimitDefault (100). Past it the broker dead-letters the
	// message, through the exchange <Queue>.dlx, into the dead-letter queue
	// (with its x-death headers, not oncely's; the dead-letter tools report
	// reason ReasonDeliveryLimit). Never dropped: the source queue always
	// has that dead-letter exchange. The broker counts clean closes too (see
	// DeliveryLimitDefault), so keep it well above the deploys a message may
	// wait through. A delivery whose x-delivery-count reached half the limit
	// is logged at Warn. Must be 0 for classic queues, which have no delivery
	// limit. A source queue that exists with another limit is reported as
	// a TopologyError, except one with the earlier default of 20 while this
	// is left at its default: that queue is used as it is, with a warning.
	DeliveryLimit int

	// MaxMessageSize is the broker's max_message_size: a retry or
	// dead-letter copy larger than this is trimmed before it is published
	// (consumer.FitCopy: the stack header first, then the error header; a
	// dead-letter copy then loses its body, replaced by size and SHA-256
	// marker headers), and a retry copy that cannot fit is refused with an
	// error wrapping consumer.ErrCopyRefused, which the runtime dead-letters
	// with reason retry-refused. RabbitMQ closes the channel of a publish
	// over its limit, which would end the connection generation and loop;
	// so set this to the broker's value when it differs (RabbitMQ 4.0
	// lowered its default to 16 MiB). Defaults to MaxMessageSizeDefault
	// (128 MiB). Headers are also kept within the connection's frame size,
	// which bounds AMQP's content-header frame.
	MaxMessageSize int

	// Tiers are the retry delays, one TTL queue each. The runtime retries
	// after the tier nearest to its policy's delay on a log scale (never
	// below a RetryAfter; see retry.Tiers.Choose) and logs that tier's
	// delay: the default policy's first retry, 1s ± 20 %, waits 1s. A delay
	// beyond the largest tier goes there and, when it comes back early, is
	// parked again for the rest of the delay, so it is never early. Only
	// the tiers the consumer's retry policy can reach are declared, by the
	// first Receive (see LimitTiers). Tiers must be whole
	// milliseconds (x-message-ttl). Defaults to retry.DefaultTiers
	// (1s, 10s, 1m, 10m, 1h).
	Tiers retry.Tiers

	// KeyHeader is the header holding the message's ordering key. Defaults
	// to KeyHeaderDefault ("message-key").
	KeyHeader string

	// ConnectionName is shown by rabbitmqctl list_connections and the
	// management UI. Defaults to "oncely <Consumer> <Queue>".
	ConnectionName string

	// ReconnectBackoff spaces reconnect attempts after the connection or a
	// channel is lost. The zero value backs off from 100ms to 30s with ±20 %
	// jitter; MaxAttempts is ignored (the adapter reconnects until closed).
	ReconnectBackoff retry.Policy

	// DialTimeout bounds a TCP connect. Defaults to DialTimeoutDefault
	// (15s).
	DialTimeout time.Duration

	// HandshakeTimeout bounds the rest of opening a connection: TLS, the
	// AMQP handshake, the login and the vhost. A broker silent past it at
	// the login step is reported as a login refused or not answered (a
	// RabbitMQ refusing a login closes the connection after 3 s; amqp091-go
	// does not ask it for the reason). Defaults to HandshakeTimeoutDefault
	// (5s).
	HandshakeTimeout time.Duration

	// RPCTimeout bounds each channel RPC; a broker that does not answer in
	// time gets its connection closed and the supervisor reconnects.
	// Defaults to RPCTimeoutDefault (15s).
	RPCTimeout time.Duration

	// Heartbeat is the AMQP heartbeat interval. Defaults to
	// HeartbeatDefault (10s).
	Heartbeat time.Duration

	// Logger receives the adapter's logs. Defaults to slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Prefetch == 0 {
		c.Prefetch = PrefetchDefault
	}
	if c.QueueType == "" {
		c.QueueType = Quorum
	}
	if c.DeliveryLimit == 0 && c.QueueType == Quorum {
		c.DeliveryLimit = DeliveryLimitDefault
	}
	if c.Tiers == nil {
		c.Tiers = retry.DefaultTiers
	}
	if c.MaxMessageSize == 0 {
		c.MaxMessageSize = MaxMessageSizeDefault
	}
	if c.KeyHeader == "" {
		c.KeyHeader = KeyHeaderDefault
	}
	if c.ConnectionName == "" {
		c.ConnectionName = "oncely " + c.Consumer + " " + c.Queue
	}
	c.ReconnectBackoff = reconnectDefaults(c.ReconnectBackoff)
	if c.DialTimeout == 0 {
		c.DialTimeout = DialTimeoutDefault
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = HandshakeTimeoutDefault
	}
	if c.RPCTimeout == 0 {
		c.RPCTimeout = RPCTimeoutDefault
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = HeartbeatDefault
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func reconnectDefaults(p retry.Policy) retry.Policy {
	if p.InitialInterval == 0 {
		p.InitialInterval = 100 * time.Millisecond
	}
	if p.MaxInterval == 0 {
		p.MaxInterval = 30 * time.Second
	}
	p.MaxAttempts = 1 << 30
	return p.WithDefaults()
}

// validate reports every invalid field, after defaults.
func (c Config) validate() error {
	var errs []error
	if err := c.validateConnection(); err != nil {
		errs = append(errs, err)
	}
	if c.Queue == "" {
		errs = append(errs, errors.New("config.Queue is required"))
	} else if strings.HasPrefix(c.Queue, "amq.") {
		errs = append(errs, fmt.Errorf("config.Queue %q: names starting with \"amq.\" are reserved by the broker", c.Queue))
	}
	if c.Consumer == "" {
		errs = append(errs, errors.New("config.Consumer is required (the consumer.Config.Name; it names the retry and dead-letter queues)"))
	}
	switch {
	case c.Prefetch < 0:
		errs = append(errs, fmt.Errorf("config.Prefetch %d is invalid: AMQP's prefetch 0 means unbounded, which lets the broker push an unlimited backlog into memory "+
			"(quorum queues silently cap it at 2,000) and hands all of it back on a crash; choose 1..%d, or 0 for the default %d", c.Prefetch, maxQuorumPrefetch, PrefetchDefault))
	case c.Prefetch > 65535:
		errs = append(errs, fmt.Errorf("config.Prefetch %d is over AMQP's limit of 65535", c.Prefetch))
	case c.QueueType == Quorum && c.Prefetch > maxQuorumPrefetch:
		errs = append(errs, fmt.Errorf("config.Prefetch %d: quorum queues cap prefetch at %d without telling the client; choose at most %d", c.Prefetch, maxQuorumPrefetch, maxQuorumPrefetch))
	}
	switch c.QueueType {
	case Quorum:
		if c.DeliveryLimit < 1 {
			errs = append(errs, fmt.Errorf("config.DeliveryLimit %d is invalid: it must be >= 1 (on RabbitMQ 3.10 a negative x-delivery-limit drops a message after its first redelivery)", c.DeliveryLimit))
		}
	case Classic:
		if c.DeliveryLimit != 0 {
			errs = append(errs, fmt.Errorf("config.DeliveryLimit %d is set but classic queues have no delivery limit; leave it 0 or use QueueType Quorum", c.DeliveryLimit))
		}
	default:
		errs = append(errs, fmt.Errorf("config.QueueType %q is unknown; use %q or %q", c.QueueType, Quorum, Classic))
	}
	if err := c.Tiers.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("config.Tiers: %w", err))
	} else {
		for _, d := range c.Tiers {
			if d%time.Millisecond != 0 {
				errs = append(errs, fmt.Errorf("config.Tiers: %s is not a whole number of milliseconds (x-message-ttl is in ms; rounding down would retry early)", d))
			}
			if d > time.Duration(1<<32-1)*time.Millisecond {
				errs = append(errs, fmt.Errorf("config.Tiers: %s is over RabbitMQ's longest message TTL (2^32-1 ms)", d))
			}
		}
	}
	if c.Queue != "" && c.Consumer != "" {
		for _, n := range append(topology{queue: c.Queue, consumer: c.Consumer, tiers: c.Tiers}.retryNames(), DeadLetterQueue(c.Queue, c.Consumer)) {
			if len(n) > maxShortString {
				errs = append(errs, fmt.Errorf("queue name %q is %d bytes, over AMQP's %d; shorten Queue or Consumer", n, len(n), maxShortString))
			}
		}
	}
	if c.MaxMessageSize < 0 {
		errs = append(errs, fmt.Errorf("config.MaxMessageSize %d is invalid: give the broker's max_message_size in bytes, or 0 for the default %d", c.MaxMessageSize, MaxMessageSizeDefault))
	}
	if err := c.ReconnectBackoff.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("config.ReconnectBackoff: %w", err))
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"DialTimeout", c.DialTimeout}, {"HandshakeTimeout", c.HandshakeTimeout}, {"RPCTimeout", c.RPCTimeout}, {"Heartbeat", c.Heartbeat}} {
		if f.d < 0 {
			errs = append(errs, fmt.Errorf("config.%s must be > 0, got %s", f.name, f.d))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("rabbitmq: invalid config: %w", errors.Join(errs...))
}

// validateConnection checks the fields a connection needs: URL and TLS.
func (c Config) validateConnection() error {
	if c.URL == "" {
		return errors.New("config.URL is required (amqp://user:pass@host:port/vhost)")
	}
	if redact.Ambiguous(c.URL) {
		return fmt.Errorf("config.URL %q has an '@' after a '/', '?' or '#': percent-encode those characters (and '@', ':', '%%') in the user name and password (url.UserPassword does)", redact.URL(c.URL))
	}
	uris, err := parseHosts(c.URL)
	if err != nil {
		// The client's message may quote the URL: shown only when the URL
		// holds no user info, and never wrapped.
		why := "want amqp://user:pass@host:port/vhost or amqps://…, with '%', '/', '?', '#', '@' and ':' percent-encoded in the user and password"
		if redact.URL(c.URL) == c.URL {
			why = err.Error()
		}
		return fmt.Errorf("config.URL does not parse (%s): %s", redact.URL(c.URL), why)
	}
	if c.TLS != nil && uris[0].Scheme != "amqps" {
		return fmt.Errorf("config.TLS is set but the URL's scheme is %s; write amqps:// for TLS", uris[0].Scheme)
	}
	return nil
}
