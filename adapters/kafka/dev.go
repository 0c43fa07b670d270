package kafka

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kfake"
)

// DevPortDefault is the port of a single-broker dev cluster.
const DevPortDefault = 9092

// DevCluster is an in-memory Kafka (franz-go's kfake) for examples, local
// development and crash tests: fixed local ports, topics created on first
// use. It is not durable and not a production broker.
type DevCluster struct {
	// Ports are the brokers' ports on 127.0.0.1, one broker per port.
	// Defaults to DevPortDefault (9092).
	Ports []int

	// Partitions is the partition count of auto-created topics. Defaults to
	// 6.
	Partitions int

	// Logger receives the addresses on start. Defaults to slog.Default().
	Logger *slog.Logger
}

// Run serves the cluster until ctx is done. ready, when not nil, is called
// with the listen addresses once the brokers accept connections.
func (d DevCluster) Run(ctx context.Context, ready func(addrs []string)) error {
	ports := d.Ports
	if len(ports) == 0 {
		ports = []int{DevPortDefault}
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
		return fmt.Errorf("kafka: starting dev cluster on %v: %w", ports, err)
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

// RunDevCluster runs a DevCluster on ports (default 9092) until ctx is done.
// It backs `oncely dev kafka`.
func RunDevCluster(ctx context.Context, ports ...int) error {
	return DevCluster{Ports: ports}.Run(ctx, nil)
}
