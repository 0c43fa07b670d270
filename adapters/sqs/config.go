package sqs

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"time"

	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/oncely/oncely/internal/redact"
	"github.com/oncely/oncely/retry"
)

// Defaults applied to zero fields of Config, and SQS's own limits.
const (
	WaitTimeSecondsDefault  = 5
	MaxMessagesDefault      = 10
	ReceiversDefault        = 4
	MaxExtensionDefault     = time.Hour
	AckFlushIntervalDefault = 5 * time.Millisecond
	IDAttributeDefault      = "message-id"
	KeyAttributeDefault     = "message-key"
	RegionDefault           = "us-east-1"

	// MaxMessageSizeDefault is SQS's limit on one message (body plus
	// attributes) since August 2025, 1 MiB; queues may set a lower
	// MaximumMessageSize.
	MaxMessageSizeDefault = 1 << 20
	// minMessageSize is the lowest MaximumMessageSize SQS accepts.
	minMessageSize = 1024

	// MaxVisibility is SQS's limit on a message's visibility timeout,
	// counted from the receive: extensions and retry delays must fit in it.
	MaxVisibility = 12 * time.Hour
	// visibilityMargin is kept off SQS's 12-hour visibility limit for a
	// retry delay: SQS counts from its receive, a little before the
	// response reached the adapter.
	visibilityMargin = 10 * time.Second
	// maxBatch is SQS's limit on messages per receive and entries per batch.
	maxBatch = 10
	// maxAttributes is SQS's limit on message attributes per message.
	maxAttributes = 10
	// renewAt is the fraction of the visibility timeout after which a
	// delivery's visibility is extended, unless that leaves less than
	// renewMargin (see renewAfter).
	renewAt = 0.7
	// renewMargin is the time an extension should have to reach SQS before
	// the visibility window ends.
	renewMargin = 2 * time.Second
	// renewRetryMin and renewRetryMax bound the wait before an extension
	// SQS did not answer is tried again: half of what is left of the
	// window before renewMargin, at most renewRetryMax; with less than
	// renewRetryMin left the lease is given up instead.
	renewRetryMin = 100 * time.Millisecond
	renewRetryMax = time.Second
)

var queueName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)

// Config configures a Source. The zero value of every field but Consumer and
// one of QueueURL or QueueName is valid and means the documented default.
type Config struct {
	// QueueURL is the source queue's URL. When empty, QueueName is looked up
	// with GetQueueUrl.
	QueueURL string

	// QueueName is the source queue's name, used when QueueURL is empty.
	// Names ending in ".fifo" are FIFO queues.
	QueueName string

	// CreateQueues creates the source queue (looked up by QueueName) and the
	// dead-letter queue when they do not exist. Default false: missing
	// queues are a start-up error.
	CreateQueues bool

	// Consumer is the consumer name (consumer.Config.Name); it names the
	// dead-letter queue. Required.
	Consumer string

	// DeadLetterQueueName names the dead-letter queue. Defaults to
	// DeadLetterQueueName(queue, Consumer): "<queue>-<consumer>-dlq" (with
	// ".fifo" appended for a FIFO source, whose dead-letter queue must be
	// FIFO too), shortened with a hash when longer than 80 characters.
	DeadLetterQueueName string

	// Region is the AWS region. Defaults to the standard AWS configuration
	// chain (AWS_REGION, shared config), then to RegionDefault when Endpoint
	// is set.
	Region string

	// Endpoint overrides the SQS endpoint, e.g. an emulator at
	// http://127.0.0.1:9324. When set and the standard configuration chain
	// yields no credentials, static dummy credentials are used and EC2
	// instance metadata is not consulted.
	Endpoint string

	// Client is the SQS client to use. Defaults to one built from Region,
	// Endpoint and the standard AWS configuration chain; when Client is set
	// those three fields are ignored.
	Client *awssqs.Client

	// WaitTimeSeconds is the long-polling wait of each receive call, 0–20.
	// Defaults to WaitTimeSecondsDefault (5); use NoWait for short polling.
	// It bounds how long Close waits for the receive calls in flight on an
	// idle queue (see Source.Close), so it is the shutdown budget the
	// adapter adds to the consumer's Stop; SettleTimeout, which bounds
	// Close, should exceed it. A longer wait saves requests only while the
	// queue is idle, when one call is in flight (see Source.Receive): one
	// request per WaitTimeSeconds.
	WaitTimeSeconds int

	// MaxMessages is the most messages one receive call asks for, 1–10.
	// Defaults to MaxMessagesDefault (10).
	MaxMessages int

	// Receivers bounds the receive calls in flight at once. A receive call
	// is only made for room the consumer runtime has asked for, so at most
	// Receivers × MaxMessages messages are leased beyond the runtime's
	// MaxInFlight. While the queue is idle (the last call came back empty)
	// one call is in flight, whatever Receivers is. Defaults to
	// ReceiversDefault (4).
	Receivers int

	// VisibilityTimeout is the visibility timeout asked for on every receive,
	// and the length of every renewal, which is sent after 70 % of it (or
	// two seconds before its end, but not before half of it). Whole seconds,
	// 1s–12h. Defaults to the queue's VisibilityTimeout attribute.
	VisibilityTimeout time.Duration

	// MaxExtension caps how long a delivery is kept invisible by renewals,
	// counted from its receive. When the cap is reached the lease is given
	// up: the handler's context is cancelled at the end of the last
	// visibility window and the message is redelivered. It also bounds the
	// retry delay: Capabilities.MaxDelay is MaxVisibility − MaxExtension,
	// because SQS counts a message's 12-hour visibility limit from its
	// receive. Defaults to MaxExtensionDefault (1h).
	MaxExtension time.Duration

	// MaxAttempts is the consumer's retry.Policy.MaxAttempts, checked
	// against the queue's RedrivePolicy at start-up: SQS must not move a
	// message to its own dead-letter queue (without failure context) before
	// the consumer dead-letters it. Defaults to retry.MaxAttemptsDefault.
	MaxAttempts int

	// IDAttribute is the message attribute holding the message ID. Defaults
	// to IDAttributeDefault ("message-id"). A message without it gets an
	// empty ID, which the runtime dead-letters with reason missing-id.
	IDAttribute string

	// KeyAttribute is the message attribute holding the ordering key of
	// messages without a MessageGroupId. Defaults to KeyAttributeDefault
	// ("message-key"). A message with neither is keyed by its ID, so a
	// standard queue's messages run in parallel (SQS standard queues keep no
	// order) while copies of one message run one after another.
	KeyAttribute string

	// AckFlushInterval is the longest an ack waits for others to share its
	// DeleteMessageBatch call; a batch of 10 is sent at once. Defaults to
	// AckFlushIntervalDefault (5ms).
	AckFlushInterval time.Duration

	// MaxMessageSize is SQS's limit on one message in bytes, counted as SQS
	// counts it: the body plus each attribute's name, data type and value.
	// Before a dead-letter copy is sent it is made to fit (see
	// consumer.FitCopy: stack dropped, error cut, then the body replaced by
	// marker attributes); a copy SQS refuses as invalid is trimmed further
	// the same way. Defaults to the source queue's MaximumMessageSize
	// attribute, else MaxMessageSizeDefault (1 MiB); 1024 to 1 MiB.
	MaxMessageSize int

	// Logger receives the adapter's logs. Defaults to slog.Default().
	Logger *slog.Logger
}

// NoWait, as Config.WaitTimeSeconds, asks for short polling (the zero value
// means the 5-second default).
const NoWait = -1

func (c Config) withDefaults() Config {
	switch c.WaitTimeSeconds {
	case 0:
		c.WaitTimeSeconds = WaitTimeSecondsDefault
	case NoWait:
		c.WaitTimeSeconds = 0
	}
	if c.MaxMessages == 0 {
		c.MaxMessages = MaxMessagesDefault
	}
	if c.Receivers == 0 {
		c.Receivers = ReceiversDefault
	}
	if c.MaxExtension == 0 {
		c.MaxExtension = MaxExtensionDefault
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = retry.MaxAttemptsDefault
	}
	if c.IDAttribute == "" {
		c.IDAttribute = IDAttributeDefault
	}
	if c.KeyAttribute == "" {
		c.KeyAttribute = KeyAttributeDefault
	}
	if c.AckFlushInterval == 0 {
		c.AckFlushInterval = AckFlushIntervalDefault
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// validate reports every invalid field, after defaults.
func (c Config) validate() error {
	var errs []error
	if c.Consumer == "" {
		errs = append(errs, errors.New("a Consumer name is required (it names the dead-letter queue)"))
	}
	if c.QueueURL == "" && c.QueueName == "" {
		errs = append(errs, errors.New("QueueURL or QueueName is required"))
	}
	if c.QueueName != "" && !ValidQueueName(c.QueueName) {
		errs = append(errs, fmt.Errorf("QueueName %q is not a valid SQS queue name (1–80 of A-Z a-z 0-9 - _, plus .fifo for FIFO queues)", c.QueueName))
	}
	if c.DeadLetterQueueName != "" && !ValidQueueName(c.DeadLetterQueueName) {
		errs = append(errs, fmt.Errorf("DeadLetterQueueName %q is not a valid SQS queue name", c.DeadLetterQueueName))
	}
	if c.WaitTimeSeconds < 0 || c.WaitTimeSeconds > 20 {
		errs = append(errs, fmt.Errorf("WaitTimeSeconds must be 0–20 (SQS's long-polling limit), got %d", c.WaitTimeSeconds))
	}
	if c.MaxMessages < 1 || c.MaxMessages > maxBatch {
		errs = append(errs, fmt.Errorf("MaxMessages must be 1–10 (SQS's receive limit), got %d", c.MaxMessages))
	}
	if c.Receivers < 1 {
		errs = append(errs, fmt.Errorf("field Receivers must be >= 1, got %d", c.Receivers))
	}
	if c.VisibilityTimeout != 0 {
		if c.VisibilityTimeout < time.Second || c.VisibilityTimeout > MaxVisibility || c.VisibilityTimeout%time.Second != 0 {
			errs = append(errs, fmt.Errorf("VisibilityTimeout must be whole seconds from 1s to 12h, got %s", c.VisibilityTimeout))
		}
	}
	if c.MaxExtension < time.Second || c.MaxExtension >= MaxVisibility {
		errs = append(errs, fmt.Errorf("MaxExtension must be at least 1s and below SQS's 12h visibility limit, got %s", c.MaxExtension))
	}
	if c.MaxAttempts < 1 {
		errs = append(errs, fmt.Errorf("MaxAttempts must be >= 1, got %d", c.MaxAttempts))
	}
	if c.MaxMessageSize != 0 && (c.MaxMessageSize < minMessageSize || c.MaxMessageSize > MaxMessageSizeDefault) {
		errs = append(errs, fmt.Errorf("MaxMessageSize must be %d to %d bytes (SQS's range), got %d", minMessageSize, MaxMessageSizeDefault, c.MaxMessageSize))
	}
	if c.AckFlushInterval < 0 {
		errs = append(errs, fmt.Errorf("AckFlushInterval must be > 0, got %s", c.AckFlushInterval))
	}
	if c.Endpoint != "" {
		if u, err := url.Parse(c.Endpoint); err != nil || u.Scheme == "" || u.Host == "" {
			errs = append(errs, fmt.Errorf("the Endpoint %q must be an absolute URL such as http://127.0.0.1:9324", redact.URL(c.Endpoint)))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("oncely/sqs: invalid config: %w", errors.Join(errs...))
}

// ValidQueueName reports whether n is a name SQS accepts for a queue: 1 to 80
// characters of letters, digits, '-' and '_', ".fifo" included.
func ValidQueueName(n string) bool {
	return len(n) <= maxQueueName && queueName.MatchString(strings.TrimSuffix(n, ".fifo"))
}

// DeadLetterQueueName derives the default dead-letter queue name for queue
// and consumer: "<queue>-<consumer>-dlq", characters SQS does not allow in
// names replaced by '-', plus ".fifo" for a FIFO queue. A name that would
// exceed SQS's 80 characters is shortened to fit: "<queue>-<consumer>" is
// cut and a hash of the full queue and consumer names is inserted before
// "-dlq", so the name stays stable across restarts and distinct for every
// (queue, consumer) pair.
func DeadLetterQueueName(queue, consumer string) string {
	base, suffix := deadLetterAffixes(queue)
	name := base + cleanQueueName(consumer)
	if len(name)+len(suffix) > maxQueueName {
		sum := sha256.Sum256([]byte(queue + "\x00" + consumer))
		hash := "-" + hex.EncodeToString(sum[:])[:12]
		name = name[:maxQueueName-len(hash)-len(suffix)] + hash
	}
	return name + suffix
}

// DeadLetterQueuePrefix is what every dead-letter queue name of queue not
// shortened by DeadLetterQueueName begins with: "<queue>-", cleaned.
func DeadLetterQueuePrefix(queue string) string {
	prefix, _ := deadLetterAffixes(queue)
	return prefix
}

// DeadLetterQueueConsumer is the inverse of DeadLetterQueueName for a known
// queue: the consumer name, as DeadLetterQueueName cleaned it, whose
// dead-letter queue of queue is name. It reports false for any other name,
// and for a name DeadLetterQueueName shortened with a hash (the consumer
// name cannot be read back from it).
func DeadLetterQueueConsumer(queue, name string) (string, bool) {
	prefix, suffix := deadLetterAffixes(queue)
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return "", false
	}
	consumer, ok := strings.CutSuffix(rest, suffix)
	if !ok || consumer == "" || DeadLetterQueueName(queue, consumer) != name {
		return "", false
	}
	return consumer, true
}

// deadLetterAffixes are the cleaned "<queue>-" and the suffix ("-dlq", or
// "-dlq.fifo" for a FIFO queue) of queue's dead-letter queue names.
func deadLetterAffixes(queue string) (prefix, suffix string) {
	base, fifo := strings.CutSuffix(queue, ".fifo")
	suffix = "-dlq"
	if fifo {
		suffix += ".fifo"
	}
	return cleanQueueName(base) + "-", suffix
}

// cleanQueueName replaces the characters SQS does not allow in queue names
// by '-'.
func cleanQueueName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '-'
	}, s)
}

// maxQueueName is SQS's limit on a queue name's length, ".fifo" included.
const maxQueueName = 80

// renewAfter is when, into a visibility window of length v, its extension is
// sent: at renewAt (70 %) of it, earlier for short windows so the extension
// has renewMargin to arrive, but never before half of it.
func renewAfter(v time.Duration) time.Duration {
	return max(v/2, min(time.Duration(renewAt*float64(v)), v-renewMargin))
}

// queueNameFromURL returns the last path element of a queue URL.
func queueNameFromURL(u string) string {
	if i := strings.LastIndexByte(u, '/'); i >= 0 {
		return u[i+1:]
	}
	return u
}
