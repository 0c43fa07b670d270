// Package runs books payslips in batches.
package runs

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"

	"heldout9/payroll/internal/tax"
)

// Runs books payslips; it keeps the IDs of the last batch for the status page.
type Runs struct {
	table tax.Table

	mu       sync.Mutex
	lastIDs  []string
	lastAt   time.Time
	busy     bool
	busyTill *time.Timer
}

type payslip struct {
	Employee string `json:"employee"`
	Gross    int64  `json:"gross"`
}

// Status returns the last batch's message IDs and time.
func (r *Runs) Status() ([]string, time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lastIDs...), r.lastAt, r.busy
}

func (r *Runs) markBusy() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.busy = true
	if r.busyTill != nil {
		r.busyTill.Stop()
	}
	r.busyTill = time.AfterFunc(30*time.Second, func() {
		r.mu.Lock()
		r.busy = false
		r.mu.Unlock()
	})
}

func (r *Runs) book(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	r.markBusy()
	slips := make([]payslip, len(msgs))
	for i, m := range msgs {
		if err := json.Unmarshal(m.Body, &slips[i]); err != nil {
			return consumer.Permanent(fmt.Errorf("message %s: %w", m.ID, err))
		}
	}
	withheld := make([]int64, len(slips))
	errs := make([]error, len(slips))
	var wg sync.WaitGroup
	for i, s := range slips {
		wg.Add(1)
		go func() {
			defer wg.Done()
			withheld[i], errs[i] = r.table.Withhold(ctx, s.Gross)
		}()
	}
	wg.Wait()
	sends := make([]outbox.Outgoing, 0, len(slips))
	ids := make([]string, 0, len(msgs))
	for i, s := range slips {
		if errs[i] != nil {
			return errs[i]
		}
		if _, err := tx.Exec(ctx, `INSERT INTO payslips (message_id, employee, gross, withheld) VALUES ($1, $2, $3, $4)`,
			msgs[i].ID, s.Employee, s.Gross, withheld[i]); err != nil {
			return err
		}
		b, _ := json.Marshal(map[string]any{"employee": s.Employee, "net": s.Gross - withheld[i]})
		sends = append(sends, outbox.Outgoing{Destination: "payroll.payslip-ready", Message: &consumer.Message{Key: s.Employee, Body: b}})
		ids = append(ids, msgs[i].ID)
	}
	if err := outbox.SendBatch(ctx, tx, sends); err != nil {
		return err
	}
	r.mu.Lock()
	r.lastIDs, r.lastAt = ids, time.Now()
	r.mu.Unlock()
	return nil
}

func (r *Runs) void(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	_, err := tx.Exec(ctx, `UPDATE payslips SET voided = true WHERE message_id = $1`, msg.Key)
	return err
}

// Start wires the payroll consumers.
func Start(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, r *Runs) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	bookSrc, err := broker.Source(ctx, "payroll.payslips", "payroll-book")
	if err != nil {
		return err
	}
	voidSrc, err := broker.Source(ctx, "payroll.voids", "payroll-void")
	if err != nil {
		return err
	}
	book, err := consumer.New(bookSrc, postgres.BatchHandlerFunc(r.book), consumer.Config{Name: "payroll-book"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	void, err := consumer.New(voidSrc, postgres.HandlerFunc(r.void), consumer.Config{Name: "payroll-void"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	go book.Run(ctx)
	go void.Run(ctx)
	return nil
}
