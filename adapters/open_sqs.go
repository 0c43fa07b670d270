package adapters

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/oncely/oncely/adapters/sqs"
	"github.com/oncely/oncely/consumer"
)

// openSQS opens sqs://REGION?endpoint=URL with adapters/sqs. REGION may be
// empty (sqs://) to use the standard AWS configuration chain; credentials
// always come from that chain (static dummy ones for an endpoint without
// any). Without an endpoint, Open fails when the chain finds no
// credentials, saying so, rather than with the first request's error. The source is the queue name; the dead-letter queue is
// "<source>-<consumer>-dlq" (sqs.DeadLetterQueueName: shortened with a hash
// past 80 characters) unless dlq= names it. Source and Publish create
// missing queues.
// Query parameters:
//
//	endpoint=URL              SQS endpoint, e.g. an emulator at http://127.0.0.1:9324
//	visibility_timeout=30s    visibility timeout of receives and renewals (default: the queue's)
//	wait=20                   long-polling wait in seconds, 0-20 (default 5)
//	receivers=N               concurrent receive calls (default 4)
//	dlq=NAME                  the dead-letter queue of every source opened through this Broker
//
// On FIFO queues Publish deduplicates by message ID, and Redrive by an ID
// unique to each redrive (SQS keeps deduplication IDs for five minutes, also
// after a deletion).
//
// Dead letters are browsed by receiving them with a one-minute visibility
// timeout and making the ones not removed visible again at the end; SQS
// counts that as a receive of the dead-lettered copy.
func openSQS(ctx context.Context, u *url.URL, o options) (Broker, error) {
	q := newQuery(u)
	cfg := sqs.Config{Region: u.Host, Endpoint: q.str("endpoint"), Logger: o.logger}
	if cfg.Endpoint != "" {
		if e, err := url.Parse(cfg.Endpoint); err != nil || e.Scheme == "" || e.Host == "" {
			q.fail("endpoint=%q: want an absolute URL such as http://127.0.0.1:9324", cfg.Endpoint)
		}
	}
	if v := q.str("visibility_timeout"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second || d%time.Second != 0 {
			q.fail("visibility_timeout=%q: want whole seconds such as 30s", v)
		}
		cfg.VisibilityTimeout = d
	}
	if v := q.str("wait"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 20 {
			q.fail("wait=%q: want 0 to 20 (seconds)", v)
		}
		cfg.WaitTimeSeconds = n
		if n == 0 {
			cfg.WaitTimeSeconds = sqs.NoWait
		}
	}
	if v := q.str("dlq"); v != "" {
		cfg.DeadLetterQueueName = v
		if !sqs.ValidQueueName(v) {
			q.fail("dlq=%q: want an SQS queue name of at most 80 letters, digits, '-' and '_' (plus .fifo)", v)
		}
	}
	if v := q.str("receivers"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			q.fail("receivers=%q: want a positive integer", v)
		}
		cfg.Receivers = n
	}
	if u.User != nil || (u.Path != "" && u.Path != "/") {
		q.fail("sqs:// URLs take a region and query parameters only: sqs://REGION?endpoint=URL")
	}
	if err := q.err(); err != nil {
		return nil, err
	}
	// The SDK builds its transport lazily; keep a hold of it to close idle
	// connections on Close.
	tr := &transportRef{}
	hc := awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) { tr.set(t) })
	client, err := sqsClient(ctx, cfg.Region, cfg.Endpoint, hc)
	if err != nil {
		return nil, err
	}
	cfg.Client = client
	lctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := client.ListQueues(lctx, &awssqs.ListQueuesInput{MaxResults: aws.Int32(1)}); err != nil {
		tr.CloseIdleConnections()
		return nil, fmt.Errorf("SQS does not answer (endpoint %q, region %q): %w", cfg.Endpoint, cfg.Region, err)
	}
	return &sqsBroker{cfg: cfg, client: client, transport: tr, urls: map[string]string{}}, nil
}

// ErrNoCredentials is returned (wrapped, with the SDK's reason) by Open for
// an sqs:// URL without endpoint= when the AWS SDK's default chain finds no
// credentials.
var ErrNoCredentials = errors.New("no AWS credentials found")

// credentialsTimeout bounds looking up AWS credentials at Open (the
// default chain may ask the EC2 instance metadata service, which is not
// there outside AWS).
const credentialsTimeout = 10 * time.Second

func sqsClient(ctx context.Context, region, endpoint string, hc *awshttp.BuildableClient) (*awssqs.Client, error) {
	opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithHTTPClient(hc)}
	if region != "" {
		opts = append(opts, awsconfig.WithRegion(region))
	}
	if endpoint != "" {
		opts = append(opts, awsconfig.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	if endpoint != "" {
		if awsCfg.Region == "" {
			awsCfg.Region = sqs.RegionDefault
		}
		if _, err := awsCfg.Credentials.Retrieve(ctx); err != nil {
			awsCfg.Credentials = credentials.NewStaticCredentialsProvider("oncely", "oncely", "")
		}
	}
	if awsCfg.Region == "" {
		return nil, errors.New("no AWS region: write sqs://REGION or set AWS_REGION")
	}
	if endpoint == "" {
		// Without credentials every request fails, and the SDK's error reads
		// like an unreachable SQS; say what is missing instead.
		cctx, cancel := context.WithTimeout(ctx, credentialsTimeout)
		defer cancel()
		if _, err := awsCfg.Credentials.Retrieve(cctx); err != nil {
			return nil, fmt.Errorf("%w: set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or run where an instance/task role is available: %w", ErrNoCredentials, err)
		}
	}
	return awssqs.NewFromConfig(awsCfg, func(o *awssqs.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	}), nil
}

type sqsBroker struct {
	cfg       sqs.Config
	client    *awssqs.Client
	transport *transportRef

	mu   sync.Mutex
	urls map[string]string
}

func (s *sqsBroker) Kind() string { return "sqs" }

func (s *sqsBroker) Source(ctx context.Context, source, consumerName string) (consumer.Source, error) {
	if err := checkNames(source, consumerName); err != nil {
		return nil, err
	}
	cfg := s.cfg
	cfg.QueueName, cfg.Consumer, cfg.CreateQueues = source, consumerName, true
	return sqs.New(ctx, cfg)
}

// deadLetterQueue names the dead-letter queue of (source, consumerName): the
// URL's dlq parameter, else sqs.DeadLetterQueueName's default.
func (s *sqsBroker) deadLetterQueue(source, consumerName string) string {
	if s.cfg.DeadLetterQueueName != "" {
		return s.cfg.DeadLetterQueueName
	}
	return sqs.DeadLetterQueueName(source, consumerName)
}

// queueURL looks queue up (creating it with create); "" when it does not
// exist and create is false.
func (s *sqsBroker) queueURL(ctx context.Context, queue string, create bool) (string, error) {
	s.mu.Lock()
	u, ok := s.urls[queue]
	s.mu.Unlock()
	if ok {
		return u, nil
	}
	out, err := s.client.GetQueueUrl(ctx, &awssqs.GetQueueUrlInput{QueueName: aws.String(queue)})
	var missing *types.QueueDoesNotExist
	switch {
	case err == nil:
		u = aws.ToString(out.QueueUrl)
	case errors.As(err, &missing) && !create:
		return "", nil
	case errors.As(err, &missing):
		in := &awssqs.CreateQueueInput{QueueName: aws.String(queue)}
		if strings.HasSuffix(queue, ".fifo") {
			in.Attributes = map[string]string{string(types.QueueAttributeNameFifoQueue): "true"}
		}
		created, err := s.client.CreateQueue(ctx, in)
		if err != nil {
			return "", fmt.Errorf("sqs: creating queue %s: %w", queue, err)
		}
		u = aws.ToString(created.QueueUrl)
	default:
		return "", fmt.Errorf("sqs: looking up queue %s: %w", queue, err)
	}
	s.mu.Lock()
	s.urls[queue] = u
	s.mu.Unlock()
	return u, nil
}

// Publish sends msgs; on a FIFO queue each message's ID is its
// MessageDeduplicationId (see publishDedupID), so a message published twice
// within SQS's five-minute deduplication window is kept once.
func (s *sqsBroker) Publish(ctx context.Context, source string, msgs ...*consumer.Message) error {
	return s.send(ctx, source, publishDedupID, msgs...)
}

// publishDedupID is m.ID when SQS takes it as a MessageDeduplicationId (1 to
// 128 ASCII letters, digits and punctuation), else "sha256-" and the hex
// SHA-256 of m.ID, so any valid message ID can be published.
func publishDedupID(m *consumer.Message) string {
	valid := len(m.ID) >= 1 && len(m.ID) <= 128
	for i := 0; valid && i < len(m.ID); i++ {
		valid = m.ID[i] > ' ' && m.ID[i] <= '~'
	}
	if valid {
		return m.ID
	}
	sum := sha256.Sum256([]byte(m.ID))
	return "sha256-" + hex.EncodeToString(sum[:])
}

// redriveDedupID is the MessageDeduplicationId of a redriven copy on a FIFO
// queue: unique to that redrive. SQS remembers deduplication IDs for five
// minutes, even after the message was deleted, so a copy deduplicated by its
// message ID would be accepted and silently dropped when the message was
// published, or redriven, less than five minutes earlier; the dead letter
// would then be removed and the message lost. The message ID attribute, and
// so the idempotency claim, stays the same.
func redriveDedupID(*consumer.Message) string { return "redrive-" + rand.Text() }

// send sends msgs in batches of ten; on a FIFO queue dedup gives each
// message's MessageDeduplicationId, asked once per message so that a batch
// entry sent again keeps its ID.
func (s *sqsBroker) send(ctx context.Context, source string, dedup func(*consumer.Message) string, msgs ...*consumer.Message) error {
	qurl, err := s.queueURL(ctx, source, true)
	if err != nil {
		return err
	}
	fifo := strings.HasSuffix(source, ".fifo")
	for start := 0; start < len(msgs); start += 10 {
		chunk := msgs[start:min(start+10, len(msgs))]
		entries := make([]types.SendMessageBatchRequestEntry, len(chunk))
		for i, m := range chunk {
			if m == nil {
				return fmt.Errorf("sqs: Publish: message %d is nil", start+i)
			}
			e := types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(string(m.Body)),
				MessageAttributes: sqsAttributes(m)}
			if fifo {
				group := m.Key
				if group == "" {
					group = m.ID
				}
				e.MessageGroupId, e.MessageDeduplicationId = aws.String(group), aws.String(dedup(m))
			}
			entries[i] = e
		}
		for try := 1; len(entries) > 0; try++ {
			out, err := s.client.SendMessageBatch(ctx, &awssqs.SendMessageBatchInput{QueueUrl: aws.String(qurl), Entries: entries})
			if err != nil {
				return fmt.Errorf("sqs: sending to %s: %w", source, err)
			}
			if len(out.Failed) == 0 {
				break
			}
			if try == 5 {
				f := out.Failed[0]
				return fmt.Errorf("sqs: sending to %s: %d messages refused, e.g. %s: %s", source, len(out.Failed), aws.ToString(f.Code), aws.ToString(f.Message))
			}
			failed := map[string]bool{}
			for _, f := range out.Failed {
				failed[aws.ToString(f.Id)] = true
			}
			entries = slices.DeleteFunc(entries, func(e types.SendMessageBatchRequestEntry) bool { return !failed[aws.ToString(e.Id)] })
			if err := sleepUntil(ctx, time.Now().Add(time.Duration(try)*100*time.Millisecond)); err != nil {
				return err
			}
		}
	}
	return nil
}

// sqsAttributes puts the ID in message-id, the key in message-key and the
// other headers in attributes of their own when they fit in SQS's ten (and
// none is empty), else all of them in one JSON attribute, as adapters/sqs
// packs failure context.
func sqsAttributes(m *consumer.Message) map[string]types.MessageAttributeValue {
	str := func(v string) types.MessageAttributeValue {
		return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	out := map[string]types.MessageAttributeValue{}
	if m.ID != "" {
		out[sqs.IDAttributeDefault] = str(m.ID)
	}
	if m.Key != "" {
		out[sqs.KeyAttributeDefault] = str(m.Key)
	}
	rest := maps.Clone(m.Headers)
	delete(rest, sqs.IDAttributeDefault)
	delete(rest, sqs.KeyAttributeDefault)
	fits := len(out)+len(rest) <= 10
	for name, v := range rest {
		if v == "" || strings.HasPrefix(strings.ToLower(name), "aws.") || strings.HasPrefix(strings.ToLower(name), "amazon.") {
			fits = false
		}
	}
	if fits {
		for name, v := range rest {
			out[name] = str(v)
		}
	} else if len(rest) > 0 {
		b, _ := json.Marshal(rest)
		out[sqs.FailureAttribute] = str(string(b))
	}
	return out
}

func (s *sqsBroker) depth(ctx context.Context, qurl string) (int64, error) {
	out, err := s.client.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{QueueUrl: aws.String(qurl),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		return 0, fmt.Errorf("sqs: reading the depth of %s: %w", qurl, err)
	}
	var n int64
	for _, v := range out.Attributes {
		if x, err := strconv.ParseInt(v, 10, 64); err == nil {
			n += x
		}
	}
	return n, nil
}

func (s *sqsBroker) Backlog(ctx context.Context, source, consumerName string) ([]consumer.Backlog, error) {
	if err := checkNames(source, consumerName); err != nil {
		return nil, err
	}
	qurl, err := s.queueURL(ctx, source, false)
	if err != nil {
		return nil, err
	}
	if qurl == "" {
		return nil, fmt.Errorf("sqs: queue %s does not exist", source)
	}
	lag, err := s.depth(ctx, qurl)
	if err != nil {
		return nil, err
	}
	dead := int64(0)
	name := s.deadLetterQueue(source, consumerName)
	durl, err := s.queueURL(ctx, name, false)
	if err != nil {
		return nil, err
	}
	if durl != "" {
		if dead, err = s.depth(ctx, durl); err != nil {
			return nil, err
		}
	}
	return []consumer.Backlog{{Source: source, Partition: -1, Lag: lag, DeadLetters: dead}}, nil
}

func (s *sqsBroker) DeadLetters(ctx context.Context, source, consumerName string, limit int) ([]DeadLetter, error) {
	sess, err := s.session(ctx, source, consumerName)
	if err != nil {
		return nil, err
	}
	return listDeadLetters(ctx, sess, limit)
}

func (s *sqsBroker) Redrive(ctx context.Context, source, consumerName string, opts RedriveOptions) (RedriveResult, error) {
	sess, err := s.session(ctx, source, consumerName)
	if err != nil {
		return RedriveResult{}, err
	}
	return redrive(ctx, sess, func(ctx context.Context, m *consumer.Message) error { return s.send(ctx, source, redriveDedupID, m) }, opts)
}

// Close drops the idle HTTP connections. Sources opened from s keep working
// (they reconnect as needed).
func (s *sqsBroker) Close() error {
	s.transport.CloseIdleConnections()
	return nil
}

// sqsHold is how long browsed dead letters stay invisible to others.
const sqsHold = 60

// sqsSession receives from a dead-letter queue and keeps what it got
// invisible until close makes the rest visible again.
type sqsSession struct {
	s      *sqsBroker
	url    string // "" when the queue does not exist
	name   string
	count  int
	got    int
	empty  int
	mu     sync.Mutex
	held   map[string]string // SQS message ID → receipt handle, not removed
	source string
}

func (s *sqsBroker) session(ctx context.Context, source, consumerName string) (*sqsSession, error) {
	if err := checkNames(source, consumerName); err != nil {
		return nil, err
	}
	name := s.deadLetterQueue(source, consumerName)
	durl, err := s.queueURL(ctx, name, false)
	if err != nil {
		return nil, err
	}
	sess := &sqsSession{s: s, url: durl, name: name, held: map[string]string{}, source: source}
	if durl != "" {
		n, err := s.depth(ctx, durl)
		if err != nil {
			return nil, err
		}
		sess.count = int(n)
	}
	return sess, nil
}

func (ss *sqsSession) total() int { return ss.count }

func (ss *sqsSession) next(ctx context.Context, n int) ([]heldLetter, error) {
	var out []heldLetter
	// SQS's depth is approximate: read until three receives come back
	// empty, bounded well above the depth so that a consumer
	// dead-lettering meanwhile cannot keep a redrive going.
	for ss.url != "" && len(out) < n && ss.got < 2*ss.count+10 && ss.empty < 3 {
		resp, err := ss.s.client.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{
			QueueUrl: aws.String(ss.url), MaxNumberOfMessages: int32(min(10, n-len(out))), VisibilityTimeout: sqsHold, WaitTimeSeconds: 1,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if err != nil {
			return out, fmt.Errorf("sqs: reading %s: %w", ss.name, err)
		}
		if len(resp.Messages) == 0 {
			ss.empty++
			continue
		}
		for _, m := range resp.Messages {
			ss.got++
			id, receipt := aws.ToString(m.MessageId), aws.ToString(m.ReceiptHandle)
			ss.mu.Lock()
			ss.held[id] = receipt
			ss.mu.Unlock()
			out = append(out, heldLetter{msg: sqsMessage(m, ss.source), remove: func(ctx context.Context) error {
				if _, err := ss.s.client.DeleteMessage(ctx, &awssqs.DeleteMessageInput{QueueUrl: aws.String(ss.url), ReceiptHandle: aws.String(receipt)}); err != nil {
					return err
				}
				ss.mu.Lock()
				delete(ss.held, id)
				ss.mu.Unlock()
				return nil
			}})
		}
	}
	return out, nil
}

// close makes the messages not removed visible again.
func (ss *sqsSession) close(ctx context.Context) error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var entries []types.ChangeMessageVisibilityBatchRequestEntry
	for id, receipt := range ss.held {
		entries = append(entries, types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(id), ReceiptHandle: aws.String(receipt), VisibilityTimeout: 0})
	}
	var errs []error
	for start := 0; start < len(entries); start += 10 {
		out, err := ss.s.client.ChangeMessageVisibilityBatch(ctx, &awssqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(ss.url), Entries: entries[start:min(start+10, len(entries))]})
		if err != nil {
			errs = append(errs, err)
		} else if len(out.Failed) > 0 {
			errs = append(errs, fmt.Errorf("%d dead letters stay invisible for up to %ds: %s", len(out.Failed), sqsHold, aws.ToString(out.Failed[0].Message)))
		}
	}
	clear(ss.held)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sqs: handing back dead letters of %s: %w", ss.name, err)
	}
	return nil
}

// sqsMessage converts a received dead letter.
func sqsMessage(m types.Message, source string) *consumer.Message {
	h := sqs.Headers(m.MessageAttributes)
	var ts time.Time
	if ms, err := strconv.ParseInt(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
		ts = time.UnixMilli(ms)
	}
	return &consumer.Message{ID: h[sqs.IDAttributeDefault], Key: h[sqs.KeyAttributeDefault], Body: []byte(aws.ToString(m.Body)), Headers: h,
		Source: source, Attempt: consumer.AttemptFromHeaders(h), Partition: -1, Offset: -1, Timestamp: ts}
}

// transportRef holds the HTTP transports an SDK client built.
type transportRef struct {
	mu  sync.Mutex
	trs []*http.Transport
}

func (r *transportRef) set(t *http.Transport) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.trs = append(r.trs, t)
}

// CloseIdleConnections closes the idle connections of every transport.
func (r *transportRef) CloseIdleConnections() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.trs {
		t.CloseIdleConnections()
	}
}
