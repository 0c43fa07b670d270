package main

import (
	"context"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The quickstart's whole run: every outcome counted, the poison and the
// malformed payment dead-lettered with their reasons, pay-1 applied once.
func Example() {
	if err := run(context.Background(), os.Stdout, false); err != nil {
		fmt.Println("error:", err)
	}
	// Output:
	// published 6 messages to payments: pay-1 twice, a poison payment (pay-4) and a malformed one (pay-5)
	// processed:          3
	// duplicates skipped: 1
	// retried:            2
	// dead-lettered:      2
	//   pay-4: exhausted after attempt 3: account "poison" always fails
	//   pay-5: permanent after attempt 1: permanent: decoding payment: unexpected end of JSON input
	// balances (cents):
	//   acc-17: 150
	//   acc-42: 1000
	// dead-letter queue of payments/ledger holds 2 messages; on a real broker (BROKER_URL=kafka://… amqp://… sqs://…) `oncely dlq redrive` moves them back
}
