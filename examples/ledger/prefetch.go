package main

import (
	"strconv"
	"strings"
)

// prefetchFor returns brokerURL sized for batches of batch messages: on the
// brokers that push ahead a bounded prefetch (RabbitMQ, NATS), a URL without
// a prefetch parameter gets one of two batches, so that a batch can fill
// while the one before it runs (the runtime refuses a BatchSize above the
// source's prefetch). A prefetch the user set, another broker, or batch ≤ 1
// leave brokerURL as it is.
func prefetchFor(brokerURL string, batch int) string {
	scheme, rest, ok := strings.Cut(brokerURL, "://")
	if batch <= 1 || !ok {
		return brokerURL
	}
	switch scheme {
	case "amqp", "amqps", "nats", "tls":
	default:
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
	return brokerURL + sep + "prefetch=" + strconv.Itoa(max(2*batch, 128))
}
