package fulfillment

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// labelJob asks a label worker to render and store one shipping label.
type labelJob struct {
	ctx     context.Context
	tx      pgx.Tx
	orderID string
	carrier string
	done    chan error
}

// labelWorkers renders labels on a fixed number of goroutines; rendering is
// CPU heavy and must not run on every handler goroutine at once.
type labelWorkers struct {
	jobs chan labelJob
}

func startLabelWorkers(n int) *labelWorkers {
	w := &labelWorkers{jobs: make(chan labelJob)}
	for i := 0; i < n; i++ {
		go w.loop()
	}
	return w
}

func (w *labelWorkers) loop() {
	for j := range w.jobs {
		pdf := render(j.orderID, j.carrier)
		_, err := j.tx.Exec(j.ctx, `INSERT INTO labels (order_id, carrier, pdf) VALUES ($1, $2, $3)`, j.orderID, j.carrier, pdf)
		if err != nil {
			err = fmt.Errorf("store label %s: %w", j.orderID, err)
		}
		j.done <- err
	}
}

func render(orderID, carrier string) []byte {
	return []byte(carrier + ":" + orderID)
}
