package sqs

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/oncely/oncely/consumer"
)

// Source reads one SQS queue for one consumer. It implements consumer.Source,
// consumer.Prober, consumer.ConsumerNamer and consumer.BacklogReporter; its deliveries implement
// consumer.Delivery, consumer.Leased and consumer.CopyTrimmer. Create it with New.
type Source struct {
	cfg        Config
	client     *awssqs.Client
	log        *slog.Logger
	queueURL   string
	queue      string
	dlqURL     string
	dlq        string
	fifo       bool
	visibility time.Duration
	maxSize    int // SQS's size limit on a copy (see Config.MaxMessageSize)

	ctx      context.Context // the source's lifetime: renewals and release of lost leases
	cancel   context.CancelFunc
	recvCtx  context.Context // receive calls: outlives Close's start, see Close
	stopRecv context.CancelFunc
	calls    sync.WaitGroup // receive calls in flight
	acks     *acker
	renewals *renewer

	mu        sync.Mutex
	closed    bool
	killed    bool
	buf       []*delivery // received, not yet handed to the runtime
	asked     int         // messages asked for by receive calls in flight
	inflight  int         // receive calls in flight
	idle      bool        // the last receive call came back empty: one call at a time until one brings messages
	recvErr   error       // the last receive call's error, reported once
	arrived   chan struct{}
	unsettled map[*delivery]struct{}
	retried   map[string]retryContext // SQS message ID → failure context of its last retry
	done      chan struct{}
}

// New connects to SQS, resolves (or creates, with CreateQueues) the source and
// dead-letter queues, reads the source queue's attributes and checks its
// RedrivePolicy against cfg.MaxAttempts. It reports every invalid setting at
// once.
func New(ctx context.Context, cfg Config) (*Source, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	client := cfg.Client
	if client == nil {
		var err error
		if client, err = newClient(ctx, cfg); err != nil {
			return nil, err
		}
	}
	s := &Source{
		cfg:       cfg,
		client:    client,
		arrived:   make(chan struct{}, 1),
		unsettled: make(map[*delivery]struct{}),
		retried:   make(map[string]retryContext),
		done:      make(chan struct{}),
	}
	if err := s.resolve(ctx); err != nil {
		return nil, err
	}
	s.log = cfg.Logger.With("queue", s.queue, "consumer", cfg.Consumer, "broker", "sqs")
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.recvCtx, s.stopRecv = context.WithCancel(context.Background())
	s.acks = newAcker(s)
	s.renewals = newRenewer(s)
	return s, nil
}

func newClient(ctx context.Context, cfg Config) (*awssqs.Client, error) {
	var opts []func(*awsconfig.LoadOptions) error
	if cfg.Region != "" {
		opts = append(opts, awsconfig.WithRegion(cfg.Region))
	}
	if cfg.Endpoint != "" {
		// A local endpoint never needs EC2 instance metadata, whose lookup
		// would stall start-up for seconds off EC2.
		opts = append(opts, awsconfig.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("oncely/sqs: loading AWS configuration: %w", err)
	}
	if cfg.Endpoint != "" {
		if awsCfg.Region == "" {
			awsCfg.Region = RegionDefault
		}
		if _, err := awsCfg.Credentials.Retrieve(ctx); err != nil {
			awsCfg.Credentials = credentials.NewStaticCredentialsProvider("oncely", "oncely", "")
		}
	}
	return awssqs.NewFromConfig(awsCfg, func(o *awssqs.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	}), nil
}

// Capabilities reports SQS's capabilities: native delay (by visibility) up to
// MaxVisibility − MaxExtension (SQS counts its 12-hour limit from the receive,
// and a delivery is settled at most MaxExtension after it), a broker delivery
// count, lease renewal, no partitions, no order on a standard queue (a FIFO
// queue orders each message group). Consumer names split the queue (no
// fan-out: each name has its own dead-letter queue and claims, but not its own
// copy of the messages), and nothing is fetched before Receive asks (no
// prefetch).
func (s *Source) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{
		Broker:        "sqs",
		NoOrder:       !s.fifo,
		NativeDelay:   true,
		MaxDelay:      MaxVisibility - s.cfg.MaxExtension,
		RetryDelay:    retryDelay,
		DeliveryCount: true,
		LeaseRenewal:  true,
		FanOut:        false,
		Prefetch:      0,
	}
}

// Probe reports whether SQS answers for the source queue, with one
// GetQueueAttributes call for one attribute. The runtime calls it when a
// settlement failed, to tell an SQS outage (hold and pause) from a failure of
// one message (its attempt counts).
func (s *Source) Probe(ctx context.Context) error {
	_, err := s.client.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(s.queueURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameVisibilityTimeout},
	})
	if err != nil {
		return fmt.Errorf("oncely/sqs: probing queue %s: %w", s.queue, err)
	}
	return nil
}

// ConsumerName is the consumer name the Source was opened for, Config.Consumer
// (see consumer.ConsumerNamer): it names the dead-letter queue.
func (s *Source) ConsumerName() string { return s.cfg.Consumer }

// QueueURL returns the source queue's URL.
func (s *Source) QueueURL() string { return s.queueURL }

// DeadLetterQueueURL returns the dead-letter queue's URL.
func (s *Source) DeadLetterQueueURL() string { return s.dlqURL }

// Receive returns up to max deliveries, waiting (long polling) until at least
// one arrives. It makes receive calls only for the room max stands for, at
// most Receivers at once and each for at most MaxMessages; messages that
// arrive after it returned are handed out by the next call. While the queue
// is idle (the last call came back empty) it keeps one call in flight, not
// Receivers: SQS answers a long poll as soon as messages arrive, so the first
// of them end the idle spell, and an idle queue costs one request per
// WaitTimeSeconds whatever Receivers is.
func (s *Source) Receive(ctx context.Context, max int) ([]consumer.Delivery, error) {
	if max < 1 {
		max = 1
	}
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, consumer.ErrSourceClosed
		}
		if len(s.buf) > 0 {
			out := make([]consumer.Delivery, 0, min(max, len(s.buf)))
			i := 0
			for ; i < len(s.buf) && len(out) < max; i++ {
				d := s.buf[i]
				if d.isLost() {
					// Its lease ended while it waited here: SQS
					// redelivers it, so it is dropped, not handled.
					delete(s.unsettled, d)
					continue
				}
				out = append(out, d)
			}
			s.buf = append(s.buf[:0], s.buf[i:]...)
			if len(out) > 0 {
				s.mu.Unlock()
				return out, nil
			}
			s.mu.Unlock()
			continue
		}
		if err := s.recvErr; err != nil {
			s.recvErr = nil
			s.mu.Unlock()
			return nil, err
		}
		calls := s.cfg.Receivers
		if s.idle {
			calls = 1
		}
		for want := max - s.asked; want > 0 && s.inflight < calls; {
			n := min(want, s.cfg.MaxMessages)
			want -= n
			s.asked += n
			s.inflight++
			s.calls.Add(1)
			go s.receive(n)
		}
		s.mu.Unlock()
		select {
		case <-s.arrived:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.done:
			return nil, consumer.ErrSourceClosed
		}
	}
}

// receive makes one ReceiveMessage call for n messages and buffers them.
func (s *Source) receive(n int) {
	defer s.calls.Done()
	in := &awssqs.ReceiveMessageInput{
		QueueUrl:              aws.String(s.queueURL),
		MaxNumberOfMessages:   int32(n),
		WaitTimeSeconds:       int32(s.cfg.WaitTimeSeconds),
		VisibilityTimeout:     int32(s.visibility / time.Second),
		MessageAttributeNames: []string{"All"},
		// Real SQS reads MessageSystemAttributeNames; local-aws-sqs 2.0.2
		// only the older AttributeNames. Asking both ways gets
		// ApproximateReceiveCount, MessageGroupId and SequenceNumber from
		// either.
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		AttributeNames:              []types.QueueAttributeName{types.QueueAttributeNameAll}, //lint:ignore SA1019 the emulator reads only this field
	}
	out, err := s.client.ReceiveMessage(s.recvCtx, in)
	at := time.Now()
	var ds []*delivery
	if err == nil {
		ds = make([]*delivery, 0, len(out.Messages))
		for _, m := range out.Messages {
			ds = append(ds, s.newDelivery(m, at))
		}
	}
	s.mu.Lock()
	s.asked -= n
	s.inflight--
	if err == nil {
		s.idle = len(ds) == 0
	}
	switch {
	case s.killed:
		s.mu.Unlock()
		return
	case s.closed:
		// Close waits for this call and then releases every unsettled
		// delivery, these included.
		for _, d := range ds {
			s.unsettled[d] = struct{}{}
		}
		s.mu.Unlock()
		return
	case err != nil && s.recvCtx.Err() == nil:
		s.recvErr = fmt.Errorf("oncely/sqs: receiving from %s: %w", s.queue, err)
	}
	for _, d := range ds {
		s.unsettled[d] = struct{}{}
		d.startRenewal()
	}
	s.buf = append(s.buf, ds...)
	s.mu.Unlock()
	select {
	case s.arrived <- struct{}{}:
	default:
	}
}

// Backlog reports the source queue's messages (visible plus in flight) and
// the dead-letter queue's depth, from SQS's approximate counters.
func (s *Source) Backlog(ctx context.Context) ([]consumer.Backlog, error) {
	src, err := s.depth(ctx, s.queueURL)
	if err != nil {
		return nil, err
	}
	dlq, err := s.depth(ctx, s.dlqURL)
	if err != nil {
		return nil, err
	}
	return []consumer.Backlog{{Source: s.queue, Partition: -1, Lag: src, DeadLetters: dlq}}, nil
}

func (s *Source) depth(ctx context.Context, url string) (int64, error) {
	out, err := s.client.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	if err != nil {
		return 0, fmt.Errorf("oncely/sqs: reading depth of %s: %w", queueNameFromURL(url), err)
	}
	var n int64
	for _, a := range []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible} {
		v, err := strconv.ParseInt(out.Attributes[string(a)], 10, 64)
		if err == nil {
			n += v
		}
	}
	return n, nil
}

// retryDelay is the delay Retry waits when asked for about d and no less
// than atLeast (consumer.Capabilities.RetryDelay): whole seconds, the unit
// of a visibility timeout; d rounded to the nearest second but at least 1s,
// atLeast rounded up.
func retryDelay(d, atLeast time.Duration) time.Duration {
	s := max(d.Round(time.Second), time.Second)
	if d <= 0 {
		s = 0
	}
	return max(s, time.Duration(visibilitySeconds(atLeast))*time.Second)
}

// visibilitySeconds rounds d up to whole seconds, so a delay is never
// shortened.
func visibilitySeconds(d time.Duration) int32 {
	if d <= 0 {
		return 0
	}
	return int32((d + time.Second - 1) / time.Second)
}
