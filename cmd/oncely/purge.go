package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
)

func runDLQPurge(ctx context.Context, a *app, args []string) error {
	fs := a.flags("dlq purge", "oncely dlq purge --broker URL --source S --consumer C [--reason R] [--error TEXT] [--id ID] [--limit N] [--dry-run] [--yes]", `
Deletes dead letters for good: every copy of each selected message ID is
removed from the dead-letter destination. The filters are redrive's: reason
(exhausted, permanent, missing-id, invalid-id, panic, retry-refused, no-claim), text in
the recorded error, message ID, and a limit on the IDs deleted.

It counts what it would delete and asks for confirmation on the terminal
first; --yes deletes without asking, and without a terminal (a script, CI)
--yes is required. --dry-run counts and changes nothing.`)
	var bf brokerFlags
	bf.register(fs)
	var opts adapters.PurgeOptions
	fs.StringVar(&opts.Reason, "reason", "", "only dead letters with this reason (exhausted, permanent, missing-id, invalid-id, panic, retry-refused, no-claim)")
	fs.StringVar(&opts.ErrorContains, "error", "", "only dead letters whose error contains this text")
	fs.StringVar(&opts.ID, "id", "", "only the dead letter with this message ID")
	fs.IntVar(&opts.Limit, "limit", 0, "stop after this many message IDs (0: all)")
	fs.BoolVar(&opts.DryRun, "dry-run", false, "count what would be deleted; change nothing")
	yes := fs.Bool("yes", false, "delete without asking for confirmation")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkFilters("dlq purge", opts.Reason, opts.Limit, opts.ID, flagSet(fs, "id")); err != nil {
		return err
	}
	ask := !*yes && !opts.DryRun
	if ask && !a.stdinTerminal {
		return usagef("dlq purge deletes dead letters for good and asks first, but standard input is not a terminal: pass --yes to delete without asking (or --dry-run to count)")
	}
	br, err := bf.open(ctx, a, "dlq purge")
	if err != nil {
		return err
	}
	defer br.Close()
	where := fmt.Sprintf("dead letters of source %s, consumer %s", safeLine(bf.source), safeLine(bf.consumer))
	if ask {
		dry := opts
		dry.DryRun = true
		res, err := br.Purge(ctx, bf.source, bf.consumer, dry)
		if err != nil {
			return sourceErr("dlq purge: counting", err)
		}
		if res.Purged == 0 {
			fmt.Fprintf(a.stdout, "nothing to purge: none of the %d %s is selected\n", res.Seen, where)
			return nil
		}
		fmt.Fprintf(a.stderr, "Delete %d of the %d %s (%d copies)? This cannot be undone. [y/N] ", res.Purged, res.Seen, where, res.Purged+res.DuplicateCopies)
		answer, _ := bufio.NewReader(a.stdin).ReadString('\n')
		if ans := strings.ToLower(strings.TrimSpace(answer)); ans != "y" && ans != "yes" {
			fmt.Fprintln(a.stdout, "not confirmed; nothing deleted")
			return nil
		}
		// Delete no more than was confirmed, though more may have arrived.
		opts.Limit = res.Purged
	}
	res, err := br.Purge(ctx, bf.source, bf.consumer, opts)
	if errors.Is(err, adapters.ErrNoSource) || errors.Is(err, adapters.ErrNoConsumer) {
		return sourceErr("dlq purge", err)
	}
	verb := "purged"
	if opts.DryRun {
		verb = "dry run: would purge"
	}
	fmt.Fprintf(a.stdout, "%s %d of %d %s", verb, res.Purged, res.Seen, where)
	if res.Skipped > 0 {
		fmt.Fprintf(a.stdout, "; %d left in place", res.Skipped)
	}
	if res.DuplicateCopies > 0 {
		fmt.Fprintf(a.stdout, "; %d extra copies of purged IDs", res.DuplicateCopies)
	}
	fmt.Fprintln(a.stdout)
	if err != nil {
		return fmt.Errorf("dlq purge stopped: %w\n(what was purged stays deleted; run the command again to continue)", err)
	}
	return nil
}

// checkFilters checks the dead-letter filters redrive and purge share.
func checkFilters(cmd, reason string, limit int, id string, idSet bool) error {
	switch reason {
	case "", consumer.ReasonExhausted, consumer.ReasonPermanent, consumer.ReasonMissingID, consumer.ReasonInvalidID, consumer.ReasonPanic, consumer.ReasonRetryRefused, consumer.ReasonNoClaim:
	default:
		return usagef("%s: unknown --reason %q; use exhausted, permanent, missing-id, invalid-id, panic, retry-refused or no-claim", cmd, reason)
	}
	if limit < 0 {
		return usagef("%s: --limit must be >= 0", cmd)
	}
	if id == "" && idSet {
		return usagef("%s: --id is empty; give a message ID, or leave --id out to select every dead letter", cmd)
	}
	return nil
}

// isTerminal reports whether f is a character device (a terminal), where
// dlq purge may ask for confirmation.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
