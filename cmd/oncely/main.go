// Command oncely operates oncely consumers: it migrates the Postgres store,
// lists, shows, redrives and purges dead letters (the outbox's too), reports lag and queue depth
// on any broker, serves the dead-letter console (a web UI), runs a Kafka dev
// cluster, runs the crash test, and checks code with oncely's analyzers
// (vet).
//
//	oncely migrate       --database-url URL [--schema oncely]
//	oncely prune         --database-url URL [--schema oncely] [--retention 168h]
//	oncely publish       --broker URL --source S --id ID [--key K] [--header k=v] [--body TEXT | --file F | < body]
//	oncely dlq list      --broker URL --source S --consumer C
//	oncely dlq show      --broker URL --source S --consumer C [--id ID [--body [--raw]]]
//	oncely dlq redrive   --broker URL --source S --consumer C [--reason R] [--error TEXT] [--id ID] [--rate N] [--dry-run]
//	oncely dlq purge     --broker URL --source S --consumer C [--reason R] [--error TEXT] [--id ID] [--limit N] [--dry-run] [--yes]
//	oncely lag           --broker URL --source S --consumer C
//	oncely outbox dead   --database-url URL [--schema oncely] [--destination D]
//	oncely outbox redrive --database-url URL [--schema oncely] (--destination D | --seq N[,N…] | --all)
//	oncely console       --broker URL --database-url URL [--addr 127.0.0.1:8080] [--watch S/C] [--token T] [--read-only]
//	oncely dev kafka     [--addr 127.0.0.1:9092]
//	oncely crashtest     [--brokers rabbitmq,kafka,sqs,nats,redis] [--kills 100] [--instances 1,3] [--handler-batch 0,10]
//	oncely vet           [--tests=false] [--tags T] [packages]   (default ./...)
//
// The broker URL (--broker, or BROKER_URL) is one of kafka://host:port
// (kafkas://user:pass@host:port for TLS and SASL),
// amqp://user:pass@host:port/vhost, sqs://REGION?endpoint=URL,
// nats://host:port or redis://host:port/db (mem://, a broker inside one
// process, is refused: it would die with the command).
// Every command takes --help.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	a := newApp(os.Stdout, os.Stderr, os.Getenv)
	a.stdin, a.stdinTerminal = os.Stdin, isTerminal(os.Stdin)
	a.stdoutTerminal = isTerminal(os.Stdout)
	code := a.run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
