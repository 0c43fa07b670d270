package main

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/oncely/oncely/internal/devkafka"
)

func runDevKafka(ctx context.Context, a *app, args []string) error {
	fs := a.flags("dev kafka", "oncely dev kafka [--ports 9092] [--partitions 6]", `
Runs an in-memory Kafka cluster (franz-go's kfake) on 127.0.0.1 until
interrupted, for examples, local development and crash tests. Topics are
created on first use. Nothing is persisted; it is not a production broker.
Point a consumer at it with BROKER_URL=kafka://127.0.0.1:9092.`)
	ports := fs.String("ports", strconv.Itoa(devkafka.PortDefault), "comma-separated ports, one broker each")
	parts := fs.Int("partitions", 6, "partitions of topics created on first use")
	if err := parse(fs, args); err != nil {
		return err
	}
	var ps []int
	var addrs []string
	for p := range strings.SplitSeq(*ports, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 0 || n > 65535 {
			return usagef("dev kafka: --ports %q: want comma-separated port numbers", *ports)
		}
		ps = append(ps, n)
	}
	if *parts < 1 {
		return usagef("dev kafka: --partitions must be >= 1")
	}
	log := slog.New(slog.NewTextHandler(a.stderr, nil))
	err := devkafka.Cluster{Ports: ps, Partitions: *parts, Logger: log}.Run(ctx, func(listen []string) {
		addrs = listen
		fmt.Fprintf(a.stdout, "dev kafka listening: BROKER_URL=kafka://%s (Ctrl-C stops it)\n", strings.Join(addrs, ","))
	})
	if err != nil {
		return fmt.Errorf("%w (is the port in use? choose another with --ports)", err)
	}
	return nil
}
