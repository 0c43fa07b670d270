package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/adapters/rabbitmq"
)

// app runs one command line. Tests build one with buffers and a shared
// memory broker.
type app struct {
	stdin io.Reader // the body of `oncely publish`; empty by default
	// stdinTerminal: stdin is a terminal, where dlq purge may ask for
	// confirmation. False by default.
	stdinTerminal bool
	// stdoutTerminal: standard output is a terminal, where dlq show --body
	// escapes control characters unless --raw. False by default.
	stdoutTerminal bool
	stdout, stderr io.Writer
	getenv         func(string) string
	// openOpts are passed to adapters.Open (tests share a mem:// broker).
	openOpts []adapters.Option
	// memoryShared: openOpts share a memory broker with the caller (tests),
	// so mem:// is accepted. False by default: a mem:// broker would live
	// and die inside this one command, and is refused.
	memoryShared bool
}

func newApp(stdout, stderr io.Writer, getenv func(string) string) *app {
	return &app{stdin: strings.NewReader(""), stdout: stdout, stderr: stderr, getenv: getenv}
}

// command is one (sub)command.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, a *app, args []string) error
	sub     []command
}

// usageError is a mistake in the command line; exit code 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

func commands() []command {
	return []command{
		{name: "migrate", summary: "create or upgrade the oncely tables in Postgres", run: runMigrate},
		{name: "prune", summary: "delete idempotency claims older than the retention window", run: runPrune},
		{name: "relay", summary: "publish the Postgres outbox through the broker, confirmed, in commit order per key", run: runRelay},
		{name: "publish", summary: "publish one message (body from a flag, a file or stdin) and wait for the broker's confirmation", run: runPublish},
		{name: "dlq", summary: "list, show, redrive and purge dead letters", sub: []command{
			{name: "list", summary: "list the dead letters of a source and consumer, one line each", run: runDLQList},
			{name: "show", summary: "show dead letters in full: headers, error, body", run: runDLQShow},
			{name: "redrive", summary: "move dead letters back to their source (same ID, attempts reset)", run: runDLQRedrive},
			{name: "purge", summary: "delete dead letters for good (asks first; --yes to skip)", run: runDLQPurge},
		}},
		{name: "outbox", summary: "list and redrive the outbox's dead rows (refused by the broker until the relay's attempts ran out)", sub: []command{
			{name: "dead", summary: "list the outbox's dead rows, one line each: ID, destination, key, attempts, reason", run: runOutboxDead},
			{name: "redrive", summary: "move outbox dead rows back into the outbox (same ID; the relay publishes them)", run: runOutboxRedrive},
		}},
		{name: "replay", summary: "rewind a consumer of Kafka, NATS JetStream or Redis Streams to a time, offsets or the beginning (--plan first; --reprocess forgets the claims)", run: runReplay},
		{name: "console", summary: "serve the dead-letter console, a web UI: groups, plans, rate-limited redrives, deletes, audit", run: runConsole},
		{name: "lag", summary: "show Kafka lag per partition, or queue and dead-letter depth", run: runLag},
		{name: "dev", summary: "run a development broker", sub: []command{
			{name: "kafka", summary: "run an in-process Kafka cluster (kfake) on local ports", run: runDevKafka},
		}},
		{name: "vet", summary: "check packages for code that breaks effectively-once (txescape, nodedupe, escape, settle)", run: runVet},
		{name: "crashtest", summary: "SIGKILL the ledger example repeatedly and count lost and duplicated effects", run: runCrashTest},
	}
}

// run executes args and returns the exit code: 0 success, 1 failure, 2 usage.
func (a *app) run(ctx context.Context, args []string) int {
	err := a.dispatch(ctx, "oncely", commands(), args)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(usageError)):
		fmt.Fprintln(a.stderr, "oncely:", safeLines(err.Error()))
		return 2
	default:
		// Errors carry broker- and message-supplied text (names, IDs, the
		// broker's own messages): made safe for a terminal like the output.
		fmt.Fprintln(a.stderr, "oncely:", safeLines(err.Error()))
		return 1
	}
}

func (a *app) dispatch(ctx context.Context, path string, cmds []command, args []string) error {
	if len(args) == 0 {
		a.groupUsage(a.stderr, path, cmds)
		return usagef("%s needs a command (see above)", path)
	}
	name := args[0]
	if name == "-h" || name == "--help" || name == "-help" || name == "help" {
		a.groupUsage(a.stdout, path, cmds)
		return flag.ErrHelp
	}
	i := slices.IndexFunc(cmds, func(c command) bool { return c.name == name })
	if i < 0 {
		var names []string
		for _, c := range cmds {
			names = append(names, c.name)
		}
		return usagef("unknown command %q for %s; commands: %s (run %s --help)", name, path, strings.Join(names, ", "), path)
	}
	c := cmds[i]
	if c.sub != nil {
		return a.dispatch(ctx, path+" "+c.name, c.sub, args[1:])
	}
	return c.run(ctx, a, args[1:])
}

func (a *app) groupUsage(w io.Writer, path string, cmds []command) {
	fmt.Fprintf(w, "Usage: %s <command> [flags]\n\nCommands:\n", path)
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun %s <command> --help for the command's flags.\n", path)
}

// flags returns a FlagSet for a command whose usage prints synopsis and
// description before the flags.
func (a *app) flags(name, synopsis, description string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(a.stderr)
	fs.Usage = func() {
		fmt.Fprintf(a.stdout, "Usage: %s\n\n%s\n\nFlags:\n", synopsis, strings.TrimSpace(description))
		fs.SetOutput(a.stdout)
		fs.PrintDefaults()
		fs.SetOutput(a.stderr)
	}
	return fs
}

// parse parses args and refuses positional arguments.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usagef("%s: %v (run %s --help)", fs.Name(), err, fs.Name())
	}
	if fs.NArg() > 0 {
		return usagef("%s: unexpected arguments %q; it takes only flags (run %s --help)", fs.Name(), fs.Args(), fs.Name())
	}
	return nil
}

// brokerFlags are the flags every broker command shares.
type brokerFlags struct {
	url      string
	source   string
	consumer string
}

func (b *brokerFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&b.url, "broker", "", "broker URL (default $BROKER_URL; prefer the variable for a URL with a password or token: a command line shows in the process list): "+strings.Join(brokerForms(), " | "))
	fs.StringVar(&b.source, "source", "", "source: the topic or queue consumed (required)")
	fs.StringVar(&b.consumer, "consumer", "", "consumer name, e.g. ledger (required)")
}

// open checks the flags and opens the broker.
func (b *brokerFlags) open(ctx context.Context, a *app, cmd string) (adapters.Broker, error) {
	var missing []string
	if b.source == "" {
		missing = append(missing, "--source")
	}
	if b.consumer == "" {
		missing = append(missing, "--consumer")
	}
	return a.openBroker(ctx, cmd, b.url, missing)
}

// openBroker opens url (or $BROKER_URL), after reporting every missing flag
// at once: url's, and those the command found missing.
func (a *app) openBroker(ctx context.Context, cmd, url string, missing []string) (adapters.Broker, error) {
	if url == "" {
		url = a.getenv("BROKER_URL")
	}
	if url == "" {
		missing = append([]string{"--broker (or BROKER_URL): " + strings.Join(brokerForms(), " | ")}, missing...)
	}
	if len(missing) > 0 {
		return nil, usagef("%s needs %s (run %s --help)", cmd, strings.Join(missing, " and "), cmd)
	}
	if scheme, _, _ := strings.Cut(url, ":"); strings.EqualFold(scheme, "mem") && !a.memoryShared {
		return nil, usagef("%s: mem:// is a broker inside one process, and this command's process ends with it: nothing it publishes or reads is shared with your application. Give the broker your application uses (%s)", cmd, strings.Join(brokerForms(), " | "))
	}
	br, err := adapters.Open(ctx, url, a.openOpts...)
	switch {
	case errors.Is(err, rabbitmq.ErrLoginRefused) || errors.Is(err, rabbitmq.ErrVhostRefused):
		return nil, fmt.Errorf("%w\n(the broker answered: check the user, password and vhost in --broker / BROKER_URL)", err)
	case errors.Is(err, adapters.ErrNoCredentials):
		return nil, fmt.Errorf("%w\n(nothing was sent to SQS: provide AWS credentials to this process)", err)
	case err != nil:
		return nil, fmt.Errorf("%w\n(check --broker / BROKER_URL and that the broker is running)", err)
	}
	return br, nil
}

// brokerForms lists the broker URL forms a command can use: adapters.Schemes
// without mem://, which the CLI refuses (see openBroker).
func brokerForms() []string {
	return slices.DeleteFunc(adapters.Schemes(), func(s string) bool { return strings.HasPrefix(s, "mem:") })
}

// flagSet reports whether the command line set the flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
