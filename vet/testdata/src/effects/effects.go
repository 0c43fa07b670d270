// Package effects seeds txescape's reports of effects outside the database
// and of calls through fields bound to the pool.
package effects

import (
	"context"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
)

type chargeRequest struct{ ID string }

// billingClient is generated gRPC client code.
type billingClient interface {
	Charge(ctx context.Context, in *chargeRequest, opts ...grpc.CallOption) (*chargeRequest, error)
}

type handler struct {
	kafka *kgo.Client
	exec  func(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error) // want exec:`boundToHandle\(\*pgxpool.Pool.Exec\)`
}

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	_, _ = http.PostForm("https://example.com/"+m.ID, nil) // want `http.PostForm is an effect outside the database .*use the outbox`
	_, _ = http.Get("https://example.com/" + m.ID)         // a read: no effect
	h.kafka.ProduceSync(ctx, &kgo.Record{Topic: "t"})      // want `\(\*kgo.Client\).ProduceSync is an effect outside the database`
	_ = http.Header{}.Get("x")                             // a header read: no effect
	h.exec(ctx, "INSERT INTO t VALUES (1)")                // want `exec runs outside the claim's transaction \(it is bound to \*pgxpool.Pool.Exec`
	//oncely:allow txescape the endpoint is idempotent by message ID, reviewed
	_, _ = http.Post("https://example.com/"+m.ID, "text/plain", nil)
	return nil
}

func New(pool *pgxpool.Pool) consumer.Handler {
	h := &handler{exec: pool.Exec}
	return postgres.HandlerFunc(h.handle)
}

type clients struct {
	rdb     *redis.Client
	nc      *nats.Conn
	q       *sqs.Client
	billing billingClient
	db      execer // want db:`boundToHandle\(\*pgxpool.Pool\)`
}

type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
}

type pinger interface {
	Ping(ctx context.Context) error
}

func (c *clients) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	_ = c.rdb.Set(ctx, "k", m.ID, 0)                     // want `the Redis command Set is an effect outside the database`
	_ = c.rdb.Get(ctx, "k")                              // a read: no effect
	_ = c.nc.Publish("s", nil)                           // want `the NATS Publish is an effect outside the database`
	_, _ = c.q.SendMessage(ctx, &sqs.SendMessageInput{}) // want `the SQS SendMessage is an effect outside the database`
	_, _ = c.q.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{}) // a lookup: no effect
	_, _ = c.billing.Charge(ctx, &chargeRequest{})       // want `the gRPC call Charge is an effect outside the database`
	var db execer = tx
	if m.ID == "" {
		db = c.db
	}
	_, _ = db.Exec(ctx, "SELECT 1") // want `db.Exec runs outside the claim's transaction \(it is bound to \*pgxpool.Pool`
	return nil
}

func NewClients(pool *pgxpool.Pool) consumer.Handler {
	c := &clients{db: pool}
	var p pinger = pool
	_ = p.Ping(context.Background())
	return postgres.HandlerFunc(c.handle)
}

// lock takes a Redis lock and releases it when it returns: neither is an
// effect a redelivery repeats.
func (c *clients) lock(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	_ = c.rdb.SetNX(ctx, "lock:"+m.ID, 1, 0)
	defer c.rdb.Del(ctx, "lock:"+m.ID)
	_, err := tx.Exec(ctx, "SELECT 1")
	return err
}

var _ = postgres.HandlerFunc((&clients{}).lock)
