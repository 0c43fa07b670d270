package adapters_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
)

// The broker is chosen by URL; the code around it stays the same on
// kafka://, amqp://, sqs:// and mem://.
func ExampleOpen() {
	ctx := context.Background()
	broker, err := adapters.Open(ctx, "mem://")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer broker.Close()
	if err := broker.Publish(ctx, "payments", &consumer.Message{ID: "pay-1", Body: []byte("{}")}); err != nil {
		fmt.Println(err)
		return
	}
	src, err := broker.Source(ctx, "payments", "ledger")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Close(ctx)
	ds, err := src.Receive(ctx, 10)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(broker.Kind(), src.Capabilities().Broker, ds[0].Message().ID, ds[0].Message().Attempt)
	// A typo in a setting is an error, never a silent default.
	_, err = adapters.Open(ctx, "kafka://127.0.0.1:9092?partitons=3")
	msg, _, _ := strings.Cut(err.Error(), " (known")
	fmt.Println(msg)
	// Output:
	// memory memory pay-1 1
	// adapters: opening kafka://127.0.0.1:9092?partitons=3 (form kafka://host:port[,host:port]): unknown query parameter "partitons"
}
