package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/oncely/oncely/internal/crashrun"
)

func runCrashTest(ctx context.Context, a *app, args []string) error {
	fs := a.flags("crashtest", "oncely crashtest [--brokers rabbitmq,kafka,sqs,nats,redis] [--kills 100] [--dedupe both] [--instances 1,3] [--handler-batch 0,10] [--batch 200] [--kafka-brokers host:port] [--kafka-membership static] [--end-to-end]", `
Crash-tests the ledger example: per broker, per number of instances, per
handler mode and per -dedupe setting, rounds of "publish a batch of
payments, start the ledger, SIGKILL it mid-stream, restart it, wait until
the batch is applied, stop it with SIGTERM", then counts per message ID the
payments lost (no ledger entry) and applied twice (more than one), and
prints a table: kills, kills with loss, kills with duplicates, worst kill.
A kill is aimed (it lands once a drawn number, 1 to 80 % of the round's
payments, have an effect) except every --timed-every-th, which lands at a
random moment 0.3-3 s after the start.

--instances 3 runs three ledger processes per round, the same consumer,
started together (competing consumers; group members on Kafka, each a
static member of its own instance ID), and each round SIGKILLs one, two or
all three of them at once and starts them again while the others work on.
--handler-batch 10 runs the ledger's batch handler (-batch 10: ten payments
per transaction; dedupe true only). Both take a comma-separated list and
every combination runs.

Run it inside the oncely source tree: it builds examples/ledger and
cmd/oncely with go build. Services: Postgres ($DATABASE_URL), RabbitMQ
($RABBITMQ_URL; prefetch=20 with several instances, so that each holds
work), the SQS emulator ($SQS_ENDPOINT), Redis ($REDIS_URL, with lease=2s)
and NATS ($NATS_URL), defaults on 127.0.0.1;
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
	kills := fs.Int("kills", 100, "kills (rounds) per broker, instances, handler mode and dedupe setting")
	dedupe := fs.String("dedupe", "both", "ledger -dedupe setting: true, false or both")
	instancesList := fs.String("instances", "1", "ledger processes per round, started together; comma-separated to run several, e.g. 1,3")
	handlerBatchList := fs.String("handler-batch", "0", "the ledger's -batch (payments per transaction; 0: one at a time); comma-separated to run several, e.g. 0,10; above 1 only with dedupe true")
	timedEvery := fs.Int("timed-every", crashrun.TimedEveryDefault, "every Nth kill is timed (0.3-3 s after the start), the others aimed at 1-80 % of the round's payments; 1: all timed")
	batch := fs.Int("batch", crashrun.BatchDefault, "payments published per round")
	concurrency := fs.Int("concurrency", crashrun.ConcurrencyDefault, "the ledger's -concurrency")
	delay := fs.Duration("handler-delay", crashrun.HandlerDelayDefault, "the ledger's -handler-delay (time per payment; with --handler-batch, per batch)")
	logDir := fs.String("log-dir", "", "keep the ledger's logs here (default: a temporary directory, removed)")
	kafkaBrokers := fs.String("kafka-brokers", a.getenv("KAFKA_BROKERS"), "Kafka to test, host:port[,host:port] (default $KAFKA_BROKERS; empty: start oncely dev kafka)")
	endToEnd := fs.Bool("end-to-end", false, "run payments → ledger outbox → oncely relay → broker → a downstream consumer, SIGKILLing the relay too (dedupe true only)")
	accounts := fs.Int("accounts", crashrun.AccountsDefault, "accounts a round's payments go to, in turn")
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
	instances, err := intList("instances", *instancesList, 1)
	if err != nil {
		return err
	}
	handlerBatches, err := intList("handler-batch", *handlerBatchList, 0)
	if err != nil {
		return err
	}
	if *timedEvery < 1 {
		return usagef("crashtest: --timed-every must be >= 1, got %d", *timedEvery)
	}
	if slices.ContainsFunc(handlerBatches, func(n int) bool { return n > 1 }) {
		explicit := false
		fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "dedupe" })
		if explicit && *dedupe == "false" {
			return usagef("crashtest: --handler-batch above 1 needs dedupe: the ledger applies batches in the idempotency claim's transaction")
		}
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
	bins, err := crashrun.Build(ctx, tmp)
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

	var results []crashrun.Result
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
				k, err := crashrun.StartKafka(ctx, bins.Oncely, filepath.Join(tmp, "kafka.log"))
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
	runs:
		for i, label := range labels {
			for _, n := range instances {
				for _, hb := range handlerBatches {
					url, run := urls[i], label
					if hb > 1 {
						run += "-batch"
					}
					if n > 1 {
						run += fmt.Sprintf("-x%d", n)
						if name == "rabbitmq" {
							// Each instance holds some of a round, not the
							// first one to consume all of it.
							url = withParam(url, "prefetch=20")
						}
					}
					res, err := crashRuns(ctx, run, url, modes, *logDir, crashrun.Config{DatabaseURL: dbURL, Ledger: bins.Ledger,
						Kills: *kills, Batch: *batch, Accounts: *accounts, Concurrency: *concurrency, HandlerDelay: *delay, Progress: progress,
						EndToEnd: *endToEnd, Oncely: bins.Oncely, Instances: n, HandlerBatch: hb, TimedEvery: *timedEvery})
					results = append(results, res...)
					errs = append(errs, err)
					if ctx.Err() != nil {
						break runs
					}
				}
			}
		}
		if stop != nil {
			stop()
		}
	}
	if len(results) > 0 {
		if err := crashrun.WriteTable(a.stdout, results); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// crashRuns runs cfg against url labelled name once per dedupe mode.
func crashRuns(ctx context.Context, name, url string, modes []bool, logDir string, cfg crashrun.Config) ([]crashrun.Result, error) {
	var results []crashrun.Result
	var errs []error
	for _, d := range modes {
		if cfg.HandlerBatch > 1 && !d {
			continue // a batch applies in the claim's transaction
		}
		c := cfg
		c.Name, c.BrokerURL, c.Dedupe = name, url, d
		if logDir != "" {
			c.LogDir = filepath.Join(logDir, fmt.Sprintf("%s-dedupe-%t", name, d))
			if err := os.MkdirAll(c.LogDir, 0o755); err != nil {
				return results, err
			}
		}
		res, err := crashrun.Run(ctx, c)
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

// intList parses --name's comma-separated list of integers, each at least
// least.
func intList(name, list string, least int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < least {
			return nil, usagef("crashtest: --%s %q: want comma-separated integers >= %d", name, list, least)
		}
		out = append(out, n)
	}
	return out, nil
}

// withParam adds the query parameter kv ("name=value") to url.
func withParam(url, kv string) string {
	if strings.Contains(url, "?") {
		return url + "&" + kv
	}
	return url + "?" + kv
}
