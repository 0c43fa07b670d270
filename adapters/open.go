// Package adapters chooses a broker adapter by URL, so application code names
// only its source ("payments") and consumer ("ledger") and the same handler
// runs on any broker:
//
//	kafka://host:port[,host:port]        Kafka (adapters/kafka); kafkas:// for TLS,
//	                                     kafkas://user:pass@… for SASL over TLS
//	amqp://user:pass@host:port/vhost     RabbitMQ (adapters/rabbitmq); amqps:// for TLS
//	sqs://REGION?endpoint=URL            Amazon SQS or an emulator (adapters/sqs)
//	nats://host:port[,host:port]         NATS JetStream (adapters/nats); tls:// for TLS
//	mem://                               a process-local memory broker (adapters/memory)
//	redis://host:port/db                 Redis Streams (adapters/redis); rediss:// for TLS,
//	                                     redis+sentinel://host:port[,host:port]/master for Sentinel,
//	                                     redis+cluster://host:port[,host:port]/ for Redis Cluster
//
// No error of Open and no log line of the Broker it returns holds the URL's
// password or token (internal/redact): errors show the URL with its user
// info hidden (user:xxxxx@, or xxxxx@ for a token), even when the URL does
// not parse. A URL whose password holds an unencoded '/', '?' or '#' before
// the '@' is refused, since URL parsers would read part of the password as
// host, path or query. Open logs a warning when tls_insecure_skip_verify=true
// turns certificate checks off, and when a URL sends credentials over a
// plain-text scheme to a host other than the loopback.
//
// A mem:// broker lives in the process that opened it: two processes (or two
// Open calls) never share one, and its messages die with the process. Use it
// for examples and tests; pass WithMemoryBroker to share one broker between
// Open calls in one process.
//
// Adapter settings come from URL query parameters. An unknown parameter is
// an error, so a typo never silently falls back to a default. The log
// brokers (kafka://, nats://, redis://) share start=earliest|latest|TIME
// (RFC 3339): where a consumer name that does not exist yet starts, default
// earliest; an existing consumer keeps its position (oncely replay moves it).
//
//	kafka://   start=earliest|latest|TIME, instance_id=ID (static membership; a restarted consumer takes its
//	           partitions back at once), partitions=N, replication=N (of topics
//	           created), tiers=1s,10s,1m (retry topic delays), retry=topics|in-place,
//	           group_protocol=classic|consumer (default classic; consumer is Kafka 4's
//	           KIP-848 protocol), session_timeout=45s (classic only: the broker sets
//	           it under the consumer protocol, so it is refused there);
//	           security: tls=true (as kafkas://), tls_ca=FILE (PEM; default the
//	           system's CAs), tls_cert=FILE and tls_key=FILE (client certificate,
//	           both or neither), tls_server_name=NAME (default each broker's host),
//	           tls_insecure_skip_verify=true (no verification: for tests only),
//	           sasl=scram-sha-512|scram-sha-256|plain (with user:pass@; default
//	           scram-sha-512). SASL is on when the URL has user info.
//	amqp://    queue_type=quorum|classic, prefetch=N (default 128), delivery_limit=N
//	           (quorum x-delivery-limit), tiers=1s,10s,1m (retry queue TTLs),
//	           key_header=NAME (ordering key header, default message-key);
//	           amqps:// also tls_ca=FILE, tls_cert=FILE, tls_key=FILE,
//	           tls_server_name=NAME, tls_insecure_skip_verify=true
//	sqs://     endpoint=URL, visibility_timeout=30s, wait=0..20 (long-poll
//	           seconds, default 5), receivers=N, dlq=NAME (the dead-letter queue)
//	nats://    start=earliest|latest|TIME, prefetch=N, ack_wait=30s, max_deliver=N (default 100), max_ack_pending=N,
//	           poll_wait=1s, max_message_size=N, key_header=NAME; tls:// also the
//	           tls_* parameters (see openNATS)
//	mem://     none
//	redis://   start=earliest|latest|TIME, lease=30s, reclaim_interval=D, block=500ms, reap_idle=1h, trim_interval=D
//	           (see openRedis); rediss:// also the tls_* parameters
//
// Names: Kafka topics are <source>, <source>.<consumer>.retry.<tier> and
// <source>.<consumer>.dlq; RabbitMQ queues the same; SQS queues <source> and
// <source>-<consumer>-dlq. A consumer name holding the separator is escaped,
// so no two (source, consumer) pairs share a destination; a name past the
// broker's limit is refused (docs/brokers.md, "Names"). Source and Publish
// create what is missing.
//
// What a consumer name means depends on the broker
// (consumer.Capabilities.FanOut, docs/brokers.md). On Kafka each consumer
// name is its own consumer group: two names of one source each get every
// message (fan-out). On RabbitMQ, SQS and memory the names share the
// source's one queue and split its messages: to give two consumers every
// message there, give each its own source (publish to both). Either way,
// idempotency claims and the retry and dead-letter destinations are kept per
// name.
//
// Besides consuming and publishing, a Broker offers what the oncely CLI needs
// to operate a consumer: dead letters listed without removing them, redriven
// back to their source (same message ID, attempt count reset), and the
// backlog (Kafka lag, queue and dead-letter depth), all without joining the
// consumer's group.
package adapters

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/redact"
)

// Broker is one broker chosen by URL. Its methods are safe for concurrent
// use. Close it when done; Sources it returned must be closed first (the
// consumer runtime closes its Source when Run returns).
type Broker interface {
	// Kind names the broker: "kafka", "rabbitmq", "sqs", "redis", "nats" or "memory".
	Kind() string

	// Source opens a consumer.Source reading source as consumerName,
	// creating the source, retry and dead-letter destinations when absent.
	// Several Sources of one (source, consumerName) share its messages. Two
	// consumer names of one source each get every message on Kafka, and
	// split the messages of the one queue on RabbitMQ, SQS and memory (the
	// Source's Capabilities().FanOut reports which; see the package doc).
	Source(ctx context.Context, source, consumerName string) (consumer.Source, error)

	// Publish sends msgs to source with each message's ID in the broker's
	// default place (Kafka header message-id, AMQP message_id property, SQS
	// attribute message-id) and returns once the broker confirmed them all.
	// It creates source when absent. A message without an ID is refused
	// before anything is sent (ErrEmptyID), and so, on Kafka and SQS, is a
	// message the broker would refuse alone (Kafka: larger than the
	// producer accepts, wrapping kerr.MessageTooLarge; SQS: wrapping
	// ErrMessageRefused): a refused message never lets a later message of
	// its key through. What a failure part-way can still reorder is in
	// docs/outbox.md.
	Publish(ctx context.Context, source string, msgs ...*consumer.Message) error

	// DeadLetters returns up to limit messages (all when limit <= 0) from the
	// dead-letter destination of (source, consumerName), in the
	// destination's order (per partition for Kafka), without removing them.
	// Copies with the same message ID (a crash between the dead-letter
	// publish and the source ack leaves two) are shown once, with
	// DeadLetter.Copies counting them.
	DeadLetters(ctx context.Context, source, consumerName string, limit int) ([]DeadLetter, error)

	// Redrive moves dead letters of (source, consumerName) back to source:
	// each selected message is published to source (same ID, Key and Body;
	// oncely failure headers removed, so the attempt count starts again at
	// 1), confirmed, and only then removed from the dead-letter destination.
	// Messages go in batches of up to 100, each confirmed as a whole before
	// any of its dead letters is removed. A crash in between leaves the
	// message in both places; the idempotency claim absorbs the second run.
	// Cancelling ctx stops it between two batches: a batch that started is
	// confirmed and its dead letters removed (within 30 seconds) before
	// Redrive returns ctx's error. See RedriveOptions for filters, rate and
	// dry runs.
	Redrive(ctx context.Context, source, consumerName string, opts RedriveOptions) (RedriveResult, error)

	// Purge deletes dead letters of (source, consumerName) for good: every
	// copy of each selected message ID is removed from the dead-letter
	// destination, as Redrive removes what it moved. See
	// PurgeOptions for filters and dry runs. What a failed Purge deleted
	// stays deleted.
	Purge(ctx context.Context, source, consumerName string, opts PurgeOptions) (PurgeResult, error)

	// Backlog reports how far consumerName is behind on source without
	// joining its consumer group: Kafka lag per partition (and the
	// dead-letter topic's depth on partition -1), or queue depth and
	// dead-letter depth for queues.
	Backlog(ctx context.Context, source, consumerName string) ([]consumer.Backlog, error)

	// Consumers lists, sorted, the consumer names that exist for source:
	// those that opened a Source on it (Kafka: also groups that committed
	// offsets on it; SQS: those whose dead-letter queue has the default
	// name). DeadLetters, Redrive, Purge and Backlog refuse any other name
	// with a *NoConsumerError (ErrNoConsumer) listing these. It returns
	// ErrNoSource (wrapped) when source does not exist, and
	// ErrConsumersUnlisted on RabbitMQ, which cannot list queues over AMQP
	// (the check of one name still works there).
	Consumers(ctx context.Context, source string) ([]string, error)

	// Close releases the broker's connections. It is idempotent.
	Close() error
}

// Option configures Open.
type Option func(*options)

type options struct {
	logger *slog.Logger
	mem    *memory.Broker
}

// WithLogger sets the logger handed to the adapter. Defaults to
// slog.Default().
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithMemoryBroker makes a mem:// URL use b instead of a new memory broker,
// so several Open calls in one process (a producer, a consumer and the CLI's
// commands in a test) share its queues. Other schemes ignore it.
func WithMemoryBroker(b *memory.Broker) Option { return func(o *options) { o.mem = b } }

// scheme is one supported URL scheme.
type scheme struct {
	name    string
	example string
	open    func(ctx context.Context, u *url.URL, o options) (Broker, error)
}

func schemes() []scheme {
	return []scheme{
		{"kafka", "kafka://host:port[,host:port]", openKafka},
		{"kafkas", "kafkas://user:pass@host:port[,host:port]", openKafka},
		{"amqp", "amqp://user:pass@host:port/vhost", openRabbitMQ},
		{"amqps", "amqps://user:pass@host:port/vhost", openRabbitMQ},
		{"sqs", "sqs://REGION?endpoint=URL", openSQS},
		{"nats", "nats://host:port[,host:port]", openNATS},
		{"tls", "tls://host:port[,host:port]", openNATS},
		{"mem", "mem://", openMemory},
		{"redis", "redis://host:port/db", openRedis},
		{"rediss", "rediss://user:pass@host:port/db", openRedis},
		{"redis+sentinel", "redis+sentinel://host:port[,host:port]/master", openRedis},
		{"redis+cluster", "redis+cluster://host:port[,host:port]/", openRedis},
		{"rediss+cluster", "rediss+cluster://user:pass@host:port[,host:port]/", openRedis},
	}
}

// Schemes lists the supported URL forms, one example per scheme, for help
// texts and error messages.
func Schemes() []string {
	var out []string
	for _, s := range schemes() {
		out = append(out, s.example)
	}
	return out
}

// ErrUnsupportedScheme is returned (wrapped) by Open for a URL whose scheme no
// adapter handles.
var ErrUnsupportedScheme = errors.New("unsupported broker URL scheme")

// Open returns the Broker for rawURL. It checks the URL and its query
// parameters, then connects where the adapter needs a connection up front.
// Errors name the problem and list the supported forms. For kafka:// it
// waits for a broker to answer at most kafka.ConnectTimeout (10s), even when
// ctx has no deadline, then fails naming the addresses; the Broker's Source
// is bounded the same way (kafka.New).
func Open(ctx context.Context, rawURL string, opts ...Option) (Broker, error) {
	o := options{logger: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	supported := "supported: " + strings.Join(Schemes(), ", ")
	if strings.TrimSpace(rawURL) == "" {
		return nil, fmt.Errorf("adapters: empty broker URL; %s", supported)
	}
	shown := redact.URL(rawURL)
	if redact.Ambiguous(rawURL) {
		return nil, fmt.Errorf("adapters: broker URL %q has an '@' after a '/', '?' or '#': percent-encode those characters (and '@', ':', '%%') in the user name and password, and URLs in query values (url.UserPassword and url.QueryEscape do); %s", shown, supported)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		// The parser's message quotes pieces of the URL, which may be
		// pieces of a password: they are cut when the URL has user info.
		why := errors.Unwrap(err).Error()
		if shown != rawURL {
			why = quoted.ReplaceAllString(why, "…") + "; percent-encode '%' in a password as %25"
		}
		return nil, fmt.Errorf("adapters: broker URL %q does not parse (%s); %s", shown, why, supported)
	}
	if u.Scheme == "" {
		return nil, fmt.Errorf("adapters: broker URL %q has no scheme; %s", shown, supported)
	}
	i := slices.IndexFunc(schemes(), func(s scheme) bool { return s.name == strings.ToLower(u.Scheme) })
	if i < 0 {
		return nil, fmt.Errorf("adapters: %w %q in %q; %s", ErrUnsupportedScheme, redact.Text(u.Scheme, redact.Secrets(rawURL)), shown, supported)
	}
	s := schemes()[i]
	o.logger = slog.New(redact.Handler(o.logger.Handler(), redact.Secrets(rawURL)))
	warnInsecure(o.logger, u, shown)
	b, err := s.open(ctx, u, o)
	if err != nil {
		return nil, redact.Error(fmt.Errorf("adapters: opening %s (form %s): %w", shown, s.example, err), rawURL)
	}
	return idChecked{b}, nil
}

// quoted matches the quoted pieces of a URL parser's message.
var quoted = regexp.MustCompile(`"[^"]*"`)

// warnInsecure logs a warning, once per Open, when u turns certificate
// verification off (tls_insecure_skip_verify=true) or sends credentials
// over a plain-text scheme to a host other than the loopback.
func warnInsecure(l *slog.Logger, u *url.URL, shown string) {
	if v := strings.ToLower(u.Query().Get("tls_insecure_skip_verify")); v == "true" || v == "1" {
		l.Warn("tls_insecure_skip_verify=true: the broker's certificate is not verified, so anyone on the network path can read and change the traffic, credentials included; use it for tests only", "url", shown)
	}
	plain := map[string]bool{"kafka": u.Query().Get("tls") != "true", "amqp": true, "nats": true, "redis": true, "redis+sentinel": true, "redis+cluster": true}
	if u.User != nil && plain[strings.ToLower(u.Scheme)] && !allLoopback(u.Host) {
		l.Warn("credentials in the broker URL go over a plain-text connection: use the scheme's TLS form (kafkas://, amqps://, tls://, rediss://)", "url", shown)
	}
}

// allLoopback reports whether every host of a URL's host part names this
// machine: one host[:port], or a comma-separated list of them (a NATS server
// list, Redis Sentinels).
func allLoopback(hosts string) bool {
	for _, hp := range strings.Split(hosts, ",") {
		host := hp
		if h, _, err := net.SplitHostPort(hp); err == nil {
			host = h
		}
		if !isLoopback(strings.Trim(host, "[]")) {
			return false
		}
	}
	return true
}

// isLoopback reports whether host names this machine.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ErrNoSource is returned (wrapped) by Broker.DeadLetters, Redrive, Purge,
// Backlog and Consumers when the source topic or queue does not exist on the
// broker, so that a mistyped name is an error rather than an empty
// dead-letter destination. They create nothing. A source that exists with a
// consumer name that never consumed it is ErrNoConsumer.
var ErrNoSource = errors.New("source does not exist")

// noSource is ErrNoSource for the topic or queue named source.
func noSource(what, source string) error {
	return fmt.Errorf("%w: %s %s", ErrNoSource, what, source)
}

// ErrEmptyID is returned (wrapped) by Broker.Publish for a message without
// an ID: its consumer would dead-letter it as missing-id, and no
// idempotency claim could tell a second publish of it from a new message.
var ErrEmptyID = errors.New("message has no ID")

// idChecked is the Broker Open returns: the adapter's, with Publish refusing
// messages without an ID. Redrive publishes through the adapter itself, so a
// missing-id dead letter can still be redriven (for a consumer whose ID
// extraction was fixed).
type idChecked struct{ Broker }

func (b idChecked) Publish(ctx context.Context, source string, msgs ...*consumer.Message) error {
	for i, m := range msgs {
		if m == nil || m.ID == "" {
			return fmt.Errorf("adapters: publishing to %s: message %d of %d: %w; set Message.ID, the idempotency key (nothing was sent)", source, i+1, len(msgs), ErrEmptyID)
		}
	}
	return b.Broker.Publish(ctx, source, msgs...)
}

// query reads a URL's query parameters and reports the unknown ones.
type query struct {
	v    url.Values
	seen map[string]bool
	errs []error
}

func newQuery(u *url.URL) *query {
	return &query{v: u.Query(), seen: map[string]bool{}}
}

// str returns parameter name, or "" when absent.
func (q *query) str(name string) string {
	q.seen[name] = true
	return q.v.Get(name)
}

func (q *query) fail(format string, args ...any) {
	q.errs = append(q.errs, fmt.Errorf(format, args...))
}

// err reports every bad or unknown parameter.
func (q *query) err() error {
	for k := range q.v {
		if !q.seen[k] {
			q.errs = append(q.errs, fmt.Errorf("unknown query parameter %q (known: %s)", k, strings.Join(sortedKeys(q.seen), ", ")))
		}
	}
	slices.SortFunc(q.errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(q.errs...)
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}

// checkNames refuses empty source and consumer names.
func checkNames(source, consumerName string) error {
	var errs []error
	if source == "" {
		errs = append(errs, errors.New("empty source name"))
	}
	if consumerName == "" {
		errs = append(errs, errors.New("empty consumer name"))
	}
	return errors.Join(errs...)
}
