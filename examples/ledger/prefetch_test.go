package main

import "testing"

// TestPrefetchFor: -batch sizes the prefetch of the brokers that push ahead,
// unless the URL sets one or the broker's default already holds two
// batches. Bugs caught: `-batch 200` on RabbitMQ refused to start
// (BatchSize above the default prefetch of 128); `-batch 50` on NATS
// lowered its prefetch below the default 256.
func TestPrefetchFor(t *testing.T) {
	for _, tc := range []struct {
		url   string
		batch int
		want  string
	}{
		{"amqp://guest:guest@127.0.0.1:5672/", 200, "amqp://guest:guest@127.0.0.1:5672/?prefetch=400"},
		{"amqp://127.0.0.1:5672/?heartbeat=10", 200, "amqp://127.0.0.1:5672/?heartbeat=10&prefetch=400"},
		{"nats://127.0.0.1:4222", 50, "nats://127.0.0.1:4222"},
		{"nats://127.0.0.1:4222", 200, "nats://127.0.0.1:4222?prefetch=400"},
		{"amqp://127.0.0.1:5672/", 64, "amqp://127.0.0.1:5672/"},
		{"amqp://127.0.0.1:5672/?prefetch=300", 200, "amqp://127.0.0.1:5672/?prefetch=300"},
		{"amqp://127.0.0.1:5672/", 0, "amqp://127.0.0.1:5672/"},
		{"kafka://127.0.0.1:9092", 200, "kafka://127.0.0.1:9092"},
		{"mem://", 200, "mem://"},
	} {
		if got := prefetchFor(tc.url, tc.batch); got != tc.want {
			t.Errorf("prefetchFor(%q, %d) = %q, want %q", tc.url, tc.batch, got, tc.want)
		}
	}
}
