package sqs_test

import (
	"fmt"

	"github.com/oncely/oncely/adapters/sqs"
)

// A broker URL chooses the region and, for an emulator, the endpoint; the
// queue and the consumer name come from code.
func ExampleConfigFromURL() {
	cfg, err := sqs.ConfigFromURL("sqs://eu-west-1?endpoint=http://127.0.0.1:9324")
	if err != nil {
		panic(err)
	}
	cfg.QueueName = "payments"
	cfg.Consumer = "ledger"
	fmt.Println(cfg.Region, cfg.Endpoint, cfg.QueueName, cfg.Consumer)
	// Output: eu-west-1 http://127.0.0.1:9324 payments ledger
}
