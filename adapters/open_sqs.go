package adapters

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
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
	"github.com/oncely/oncely/internal/redact"
)

// openSQS opens sqs://REGION?endpoint=URL with adapters/sqs. REGION may be
// empty (sqs://) to use the standard AWS configuration chain; credentials
// always come from that chain (static dummy ones for an endpoint without
// any). Without an endpoint, Open fails when the chain finds no
// credentials, saying so, rather than with the first request's error. The source is the queue name; the dead-letter queue is
// "<source>-<consumer>-dlq" (sqs.DeadLetterQueueName: other consumer names
// escaped, refused past 80 characters) unless dlq= names it. Source and Publish create
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
			q.fail("endpoint=%q: want an absolute URL such as http://127.0.0.1:9324", redact.URL(cfg.Endpoint))
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
		return nil, redact.Error(fmt.Errorf("SQS does not answer (endpoint %q, region %q): %w", redact.URL(cfg.Endpoint), cfg.Region, err), cfg.Endpoint)
	}
	return &sqsBroker{cfg: cfg, client: client, transport: tr, urls: map[string]string{}, maxSizes: map[string]int{}}, nil
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

	mu       sync.Mutex
	urls     map[string]string
	maxSizes map[string]int // queue URL → MaximumMessageSize
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
func (s *sqsBroker) deadLetterQueue(source, consumerName string) (string, error) {
	if s.cfg.DeadLetterQueueName != "" {
		return s.cfg.DeadLetterQueueName, nil
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
		return nil, noSource("sqs queue", source)
	}
	if err := checkConsumer(ctx, s, source, consumerName); err != nil {
		return nil, err
	}
	lag, err := s.depth(ctx, qurl)
	if err != nil {
		return nil, err
	}
	dead := int64(0)
	name, err := s.deadLetterQueue(source, consumerName)
	if err != nil {
		return nil, err
	}
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

// Close drops the idle HTTP connections. Sources opened from s keep working
// (they reconnect as needed).
func (s *sqsBroker) Close() error {
	s.transport.CloseIdleConnections()
	return nil
}
