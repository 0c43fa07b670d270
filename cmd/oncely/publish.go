package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/oncely/oncely/consumer"
)

// headerFlags collects repeated --header k=v flags.
type headerFlags map[string]string

func (h headerFlags) String() string { return fmt.Sprint(map[string]string(h)) }

func (h headerFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", v)
	}
	h[k] = val
	return nil
}

func runPublish(ctx context.Context, a *app, args []string) error {
	fs := a.flags("publish", "oncely publish --broker URL --source S --id ID [--key K] [--header k=v]... [--body TEXT | --file F | < body]", `
Publishes one message to a source and returns once the broker confirmed it,
creating the source when absent, with the ID in the broker's default place
(so a consumer's idempotency claim sees it). The body comes from --body,
from --file, or else from standard input.`)
	url := fs.String("broker", "", "broker URL (default $BROKER_URL; prefer the variable for a URL with a password or token: a command line shows in the process list)")
	source := fs.String("source", "", "source: the topic or queue (required)")
	id := fs.String("id", "", "message ID, the idempotency key (required)")
	key := fs.String("key", "", "ordering key")
	body := fs.String("body", "", "message body")
	file := fs.String("file", "", "read the body from this file")
	headers := headerFlags{}
	fs.Var(headers, "header", "a header NAME=VALUE (repeatable)")
	if err := parse(fs, args); err != nil {
		return err
	}
	bodySet := flagSet(fs, "body")
	if bodySet && *file != "" {
		return usagef("publish: give --body or --file, not both")
	}
	var missing []string
	if *source == "" {
		missing = append(missing, "--source")
	}
	if *id == "" {
		missing = append(missing, "--id (a message without one is dead-lettered as missing-id)")
	}
	br, err := a.openBroker(ctx, "publish", *url, missing)
	if err != nil {
		return err
	}
	defer br.Close()
	data := []byte(*body)
	switch {
	case *file != "":
		if data, err = os.ReadFile(*file); err != nil {
			return fmt.Errorf("publish: --file: %w", err)
		}
	case !bodySet:
		if data, err = io.ReadAll(a.stdin); err != nil {
			return fmt.Errorf("publish: reading the body from standard input: %w", err)
		}
	}
	msg := &consumer.Message{ID: *id, Key: *key, Body: data, Headers: headers}
	if err := br.Publish(ctx, *source, msg); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	fmt.Fprintf(a.stdout, "published %s to %s (%d bytes)\n", safeLine(*id), safeLine(*source), len(data))
	return nil
}
