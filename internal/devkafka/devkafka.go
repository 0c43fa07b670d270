// Package devkafka runs an in-memory Kafka (franz-go's kfake) for `oncely dev
// kafka`, examples and benchmarks. It lives apart from adapters/kafka so that
// a program using the adapter does not link a fake broker.
package devkafka

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kfake"
)

// PortDefault is the port of a single-broker dev cluster.
const PortDefault = 9092

// Cluster is an in-memory Kafka (franz-go's kfake) for examples, local
// development and crash tests: fixed local ports, topics created on first
// use. It is not durable and not a production broker.
type Cluster struct {
	// Ports are the brokers' ports on 127.0.0.1, one broker per port.
	// Defaults to PortDefault (9092).
	Ports []int

	// Partitions is the partition count of auto-created topics. Defaults to
	// 6.
	Partitions int

	// Logger receives the addresses on start. Defaults to slog.Default().
	Logger *slog.Logger
}

// Run serves the cluster until ctx is done. ready, when not nil, is called
// with the listen addresses once the brokers accept connections.
func (d Cluster) Run(ctx context.Context, ready func(addrs []string)) error {
	ports := d.Ports
	if len(ports) == 0 {
		ports = []int{PortDefault}
	}
	parts := d.Partitions
	if parts == 0 {
		parts = 6
	}
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	c, err := kfake.NewCluster(kfake.Ports(ports...), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(parts))
	if err != nil {
		return fmt.Errorf("devkafka: starting on %v: %w", ports, err)
	}
	defer c.Close()
	addrs := c.ListenAddrs()
	log.Info("dev kafka cluster listening", "brokers", addrs)
	if ready != nil {
		ready(addrs)
	}
	<-ctx.Done()
	log.Info("dev kafka cluster stopping")
	return nil
}
