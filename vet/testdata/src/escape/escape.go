// Package escape seeds the escape analyzer's cases.
package escape

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

func send(ctx context.Context, id string) {}

func count() {}

// ---- must be reported ----

// 1. The transaction in a goroutine's function literal.
var h1 = postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	go func() { // want `goroutine captures the handler's transaction tx`
		_, _ = tx.Exec(context.Background(), "INSERT INTO audit VALUES ($1)", msg.ID)
	}()
	return nil
})

// 2. The context as a goroutine's argument.
var h2 = postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	go send(ctx, msg.ID) // want `goroutine captures the handler's context ctx`
	return nil
})

// 3. A context derived from the handler's.
var h3 = postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	go func() { send(short, msg.ID) }() // want `goroutine captures the handler's context short`
	return nil
})

// 4. WithoutCancel still carries the transaction.
var h4 = postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	bg := context.WithoutCancel(ctx)
	go send(bg, msg.ID) // want `goroutine captures the handler's context bg`
	return nil
})

// 5. A handler using postgres.Tx starts a statement in a goroutine.
type ledger struct{}

func (ledger) Handle(ctx context.Context, msg *consumer.Message) error { // want Handle:`paramFlows\(goroutine:a go statement at escape.go:57;\)`
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return nil
	}
	go tx.Exec(ctx, "INSERT INTO audit VALUES ($1)", msg.ID) // want `goroutine captures the handler's (transaction tx|context ctx)`
	return fanOut(ctx, tx)
}

// 6. Through a helper of the package the handler passes its transaction to.
func fanOut(ctx context.Context, t pgx.Tx) error { // want fanOut:`paramFlows\(goroutine:a go statement at escape.go:63;goroutine:a go statement at escape.go:63;\)`
	go func() { _, _ = t.Exec(ctx, "SELECT 1") }() // want `goroutine captures the handler's (transaction t|context ctx)`
	return nil
}

// 7. A Store's Process function hands its context to a goroutine.
func process(ctx context.Context, s *postgres.Store, id string) error {
	_, err := s.Process(ctx, "ledger", id, func(ctx context.Context) error {
		go send(ctx, id) // want `goroutine captures the handler's context ctx`
		return nil
	})
	return err
}

// ---- must not be reported ----

var ok1 = postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	go count()                          // uses neither
	go send(context.Background(), "x")  // a context of its own
	id := msg.ID                        // a copy of a value
	go func() { send(nil, id) }()       // neither the context nor the transaction
	var wg sync.WaitGroup               // structured: waited for before returning
	wg.Go(func() { send(ctx, msg.ID) }) // not a go statement
	wg.Wait()
	//oncely:allow escape the goroutine is joined before the handler returns
	go send(ctx, msg.ID)
	return nil
})

// A plain handler, not transactional, may start goroutines with its context.
var ok2 = consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
	go send(ctx, msg.ID)
	return nil
})

// Setup code with a context of the same name.
func start(ctx context.Context) { // want start:`paramFlows\(goroutine:a go statement at escape.go:99;\)`
	go send(ctx, "boot")
}
