// Command kfakecmd runs a devkafka.Cluster (kfake) in its own process for the
// adapter's benchmarks: it prints "LISTEN <addr>[,<addr>]" on stdout once the
// brokers accept connections and serves until SIGINT/SIGTERM or until stdin
// closes (so it dies with the benchmark that started it).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/oncely/oncely/internal/devkafka"
)

func main() {
	port := flag.Int("port", 0, "broker port on 127.0.0.1 (0: any free port)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	dev := devkafka.Cluster{Ports: []int{*port}, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	err := dev.Run(ctx, func(addrs []string) {
		fmt.Printf("LISTEN %s\n", strings.Join(addrs, ","))
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
