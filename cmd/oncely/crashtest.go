package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/oncely/oncely/internal/crashtest"
)

func runCrashTest(ctx context.Context, a *app, args []string) error {
	fs := a.flags("crashtest", "oncely crashtest [--brokers rabbitmq,kafka,sqs,nats] [--kills 100] [--dedupe both] [--batch 200] [--kafka-brokers host:port] [--kafka-membership static] [--end-to-end]", `
Crash-tests the ledger example: per broker and per -dedupe setting, rounds of
"publish a batch of payments, start the ledger, SIGKILL it 0.3-3 s after its
start, restart it, wait until the batch is applied, stop it with SIGTERM",
then counts per message ID the payments lost (no ledger entry) and applied
twice (more than one), and prints a table: kills, kills with loss, kills with
duplicates, worst kill.

Run it inside the oncely source tree: it builds examples/ledger and
cmd/oncely with go build. Services: Postgres ($DATABASE_URL), RabbitMQ
($RABBITMQ_URL), the SQS emulator ($SQS_ENDPOINT), Redis ($REDIS_URL, with
lease=2s) and NATS ($NATS_URL), defaults on 127.0.0.1;
Kafka is the one at --kafka-brokers ($KAFKA_BROKERS), else a dev cluster
(oncely dev kafka) started as a separate process. The table's resume columns
are the times from a kill to the next payment applied.

With --end-to-end (dedupe only) the ledger also sends one event per applied
payment through its outbox, a separate oncely relay process publishes them,
and a downstream consumer in this process applies them with claims of its
own. Every round SIGKILLs the relay too (three rounds in four once a relay
round has published and waits to mark), and a second table counts relay
kills that landed mid-round, events lost, applied twice and out of
per-account order.`)
	brokers := fs.String("brokers", "rabbitmq,kafka,sqs", "brokers to test, comma-separated: rabbitmq, kafka, sqs, redis, nats")
	kills := fs.Int("kills", 100, "kills (rounds) per broker and dedupe setting")
	dedupe := fs.String("dedupe", "both", "ledger -dedupe setting: true, false or both")
	batch := fs.Int("batch", crashtest.BatchDefault, "payments published per round")
	concurrency := fs.Int("concurrency", crashtest.ConcurrencyDefault, "the ledger's -concurrency")
	delay := fs.Duration("handler-delay", crashtest.HandlerDelayDefault, "the ledger's -handler-delay (time per payment)")
	logDir := fs.String("log-dir", "", "keep the ledger's logs here (default: a temporary directory, removed)")
	kafkaBrokers := fs.String("kafka-brokers", a.getenv("KAFKA_BROKERS"), "Kafka to test, host:port[,host:port] (default $KAFKA_BROKERS; empty: start oncely dev kafka)")
	endToEnd := fs.Bool("end-to-end", false, "run payments → ledger outbox → oncely relay → broker → a downstream consumer, SIGKILLing the relay too (dedupe true only)")
	accounts := fs.Int("accounts", crashtest.AccountsDefault, "accounts a round's payments go to, in turn")
	membership := fs.String("kafka-membership", "static", "Kafka group membership: static (instance_id=ledger-crashtest), dynamic (the URL without it) or both")
	if err := parse(fs, args); err != nil {
		return err
	}
	var modes []bool
	switch *dedupe {
	case "both":
		modes = []bool{true, false}
	case "true":
		modes = []bool{true}
	case "false":
		modes = []bool{false}
	default:
		return usagef("crashtest: --dedupe %q: want true, false or both", *dedupe)
	}
	if *endToEnd {
		explicit := false
		fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "dedupe" })
		if explicit && *dedupe != "true" {
			return usagef("crashtest: --end-to-end needs --dedupe true: exactly one event per payment needs the ledger's claims")
		}
		modes = []bool{true}
	}
	kafkaURLs := map[string]string{"static": "?instance_id=ledger-crashtest", "dynamic": ""}
	var memberships []string
	switch *membership {
	case "both":
		// Dynamic first: a stopped static member stays in the group until
		// its session times out and would hold up the dynamic run's join.
		memberships = []string{"dynamic", "static"}
	case "static", "dynamic":
		memberships = []string{*membership}
	default:
		return usagef("crashtest: --kafka-membership %q: want static, dynamic or both", *membership)
	}
	names := strings.Split(*brokers, ",")
	for _, n := range names {
		if !slices.Contains([]string{"rabbitmq", "kafka", "sqs", "redis", "nats"}, n) {
			return usagef("crashtest: --brokers: unknown broker %q; choose among rabbitmq, kafka, sqs, redis, nats (mem:// cannot survive a kill)", n)
		}
	}
	env := func(name, def string) string {
		if v := a.getenv(name); v != "" {
			return v
		}
		return def
	}
	dbURL := env("DATABASE_URL", env("TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"))

	tmp, err := os.MkdirTemp("", "oncely-crashtest-bin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	fmt.Fprintln(a.stderr, "building examples/ledger and cmd/oncely …")
	bins, err := crashtest.Build(ctx, tmp)
	if err != nil {
		return err
	}
	if *logDir != "" {
		if err := os.MkdirAll(*logDir, 0o755); err != nil {
			return err
		}
	}
	progress := func(format string, args ...any) {
		fmt.Fprintf(a.stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
	}

	var results []crashtest.Result
	var errs []error
	for _, name := range names {
		// The runs on this broker, in order: label and URL.
		var labels, urls []string
		var stop func()
		switch name {
		case "rabbitmq":
			labels, urls = []string{name}, []string{env("RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672/")}
		case "sqs":
			labels, urls = []string{name}, []string{"sqs://us-east-1?endpoint=" + env("SQS_ENDPOINT", "http://127.0.0.1:9324") + "&visibility_timeout=5s&wait=1"}
		case "redis":
			labels, urls = []string{name}, []string{env("REDIS_URL", "redis://127.0.0.1:6379/0") + "?lease=2s"}
		case "nats":
			// A kill leaves what the ledger held leased until AckWait: 5s keeps rounds short.
			labels, urls = []string{name}, []string{env("NATS_URL", "nats://127.0.0.1:4222") + "?ack_wait=5s"}
		case "kafka":
			base := "kafka://" + *kafkaBrokers
			if *kafkaBrokers == "" {
				k, err := crashtest.StartKafka(ctx, bins.Oncely, filepath.Join(tmp, "kafka.log"))
				if err != nil {
					errs = append(errs, fmt.Errorf("kafka: %w", err))
					continue
				}
				base, stop = k.URL, k.Stop
			}
			for _, m := range memberships {
				labels, urls = append(labels, "kafka-"+m), append(urls, base+kafkaURLs[m])
			}
		}
		for i, label := range labels {
			res, err := crashRuns(ctx, label, urls[i], modes, *logDir, crashtest.Config{DatabaseURL: dbURL, Ledger: bins.Ledger,
				Kills: *kills, Batch: *batch, Accounts: *accounts, Concurrency: *concurrency, HandlerDelay: *delay, Progress: progress,
				EndToEnd: *endToEnd, Oncely: bins.Oncely})
			results = append(results, res...)
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
		}
		if stop != nil {
			stop()
		}
	}
	if len(results) > 0 {
		if err := crashtest.WriteTable(a.stdout, results); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// crashRuns runs cfg against url labelled name once per dedupe mode.
func crashRuns(ctx context.Context, name, url string, modes []bool, logDir string, cfg crashtest.Config) ([]crashtest.Result, error) {
	var results []crashtest.Result
	var errs []error
	for _, d := range modes {
		c := cfg
		c.Name, c.BrokerURL, c.Dedupe = name, url, d
		if logDir != "" {
			c.LogDir = filepath.Join(logDir, fmt.Sprintf("%s-dedupe-%t", name, d))
			if err := os.MkdirAll(c.LogDir, 0o755); err != nil {
				return results, err
			}
		}
		res, err := crashtest.Run(ctx, c)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s dedupe=%t: run abandoned after %d kills: %w", name, d, len(res.Kills), err))
		} else {
			results = append(results, res)
		}
		if ctx.Err() != nil {
			break
		}
	}
	return results, errors.Join(errs...)
}
