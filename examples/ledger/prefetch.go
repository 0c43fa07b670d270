package main

import (
	"strconv"
	"strings"

	"github.com/oncely/oncely/adapters/nats"
	"github.com/oncely/oncely/adapters/rabbitmq"
)

// prefetchFor returns brokerURL sized for batches of batch messages: on the
// brokers that push ahead a bounded prefetch (RabbitMQ, NATS), a URL without
// a prefetch parameter gets one of two batches where that is above the
// broker's default, so that a batch can fill while the one before it runs
// (the runtime refuses a BatchSize above the source's prefetch). A prefetch
// the user set, another broker, batch ≤ 1 or two batches within the
// broker's default prefetch leave brokerURL as it is.
func prefetchFor(brokerURL string, batch int) string {
	scheme, rest, ok := strings.Cut(brokerURL, "://")
	if batch <= 1 || !ok {
		return brokerURL
	}
	var def int
	switch scheme {
	case "amqp", "amqps":
		def = rabbitmq.PrefetchDefault
	case "nats", "tls":
		def = nats.PrefetchDefault
	default:
		return brokerURL
	}
	if 2*batch <= def {
		return brokerURL
	}
	_, query, hasQuery := strings.Cut(rest, "?")
	for _, kv := range strings.Split(query, "&") {
		if k, _, _ := strings.Cut(kv, "="); hasQuery && k == "prefetch" {
			return brokerURL
		}
	}
	sep := "?"
	if hasQuery {
		sep = "&"
	}
	return brokerURL + sep + "prefetch=" + strconv.Itoa(2*batch)
}
