package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/adapters/kafka"
	"github.com/oncely/oncely/internal/failpoint"
	"github.com/oncely/oncely/internal/replayplan"
)

func runReplay(ctx context.Context, a *app, args []string) error {
	fs := a.flags("replay", "oncely replay --broker URL --source S --consumer C --to earliest|TIME|P:O,...|0:ENTRY-ID [--plan] [--database-url URL] [--reprocess [--yes]] [--output text|json]", `
Rewinds an existing consumer of a log broker (Kafka, NATS JetStream, Redis
Streams) so that it reads again what it already consumed: to the oldest record kept (earliest), to the first
record stamped at or after an RFC 3339 time, or to given offsets per
partition (partitions not named stay where they are; a JetStream stream is
partition 0, its offsets stream sequences; a Redis stream is partition 0,
its offset an entry ID, 0:1733550000000-0, the first entry delivered again
or, when no entry has that ID, the first after it). A rewind never moves a
partition forward: a time after its position leaves it there, and an offset
after it is refused, since moving there would skip records (a Redis entry
ID after the group's position is refused when entries lie between, and
always when it is after the stream's last entry). A target before the
oldest record kept starts at the oldest one, said so in the plan.

--plan prints, per partition, the committed offset, the target, the records
covered and, with --database-url, how many of them already have an
idempotency claim of the consumer (their handler committed: with
deduplication on, the rewound consumer skips them). It changes nothing.

Without --plan it commits the targets for the consumer group, all partitions
in one request (a crash leaves all partitions at their old offsets or all at
their new ones). The group must have no live members: stop every consumer of it
first; the error names the members that are still there. On JetStream the
durable consumer is deleted and created again at the target sequence (a
consumer's start cannot be moved), refused while a Source pulls from it; a
marker consumer <consumer>__replay holds the new start meanwhile, so that a
crash in between leaves a consumer that a Source (or the replay run again)
creates at the new start. On
Redis the group is moved with XGROUP SETID,
refused while a consumer of the group read within the last 10 s. Running it twice
does the same as once.

--reprocess also deletes the claims of exactly the covered records (their
message IDs), so that the rewound consumer runs their handlers again, after
a confirmation on the terminal (--yes to skip it; required without a
terminal). The claims go first, in one transaction with a row in the
console_audit table; the offsets are committed after. Handlers must then be
idempotent by their own logic: their effects happen a second time.

Queue brokers (RabbitMQ, SQS) have no position to rewind: an acked message is
gone. Run failed messages again with oncely dlq redrive.`)
	var bf brokerFlags
	bf.register(fs)
	to := fs.String("to", "", "where to rewind: earliest, an RFC 3339 time, partition:offset[,partition:offset…], or on Redis 0:<entry ID> (required)")
	planOnly := fs.Bool("plan", false, "print what the replay would do and change nothing")
	reprocess := fs.Bool("reprocess", false, "also delete the idempotency claims of the covered records (needs --database-url)")
	yes := fs.Bool("yes", false, "with --reprocess: delete the claims without asking")
	actor := fs.String("actor", "", "who runs the replay, for the audit row (default $USER)")
	db := databaseFlags(fs)
	output := outputFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkOutput("replay", *output); err != nil {
		return err
	}
	if *to == "" {
		return usagef("replay needs --to earliest|TIME|partition:offset,... (run replay --help)")
	}
	target, err := adapters.ParseReplayTarget(*to)
	if err != nil {
		return usagef("replay: --to: %v", err)
	}
	if *db.url == "" {
		*db.url = a.getenv("DATABASE_URL")
	}
	if *reprocess && *db.url == "" {
		return usagef("replay --reprocess deletes idempotency claims: it needs --database-url or DATABASE_URL")
	}
	ask := *reprocess && !*yes && !*planOnly
	if ask && !a.stdinTerminal {
		return usagef("replay --reprocess deletes idempotency claims and asks first, but standard input is not a terminal: pass --yes to delete without asking (or --plan to look first)")
	}
	br, err := bf.open(ctx, a, "replay")
	if err != nil {
		return err
	}
	defer br.Close()
	r, ok := adapters.AsReplayer(br)
	if !ok {
		return notReplayable(br.Kind())
	}
	plan, err := r.PlanReplay(ctx, bf.source, bf.consumer, target)
	if err != nil {
		return sourceErr("replay", err)
	}
	var claims *replayplan.Claims
	var pool *pgxpool.Pool
	if *db.url != "" {
		if pool, err = db.open(ctx, a, "replay"); err != nil {
			return err
		}
		defer pool.Close()
		claims, err = countClaims(ctx, a, r, plan, pool, *db.schema)
		if err != nil {
			return err
		}
	}
	if *planOnly {
		return writeReplayPlan(a.stdout, *output, plan, claims, "plan", "nothing was changed; run without --plan to rewind")
	}
	if len(plan.Members) > 0 {
		return fmt.Errorf("replay: %w", &kafka.LiveMembersError{Group: plan.Consumer, Members: plan.Members})
	}
	if *reprocess {
		return runReprocess(ctx, a, r, plan, claims, pool, *db.schema, reprocessRun{ask: ask, actor: *actor, output: *output})
	}
	if err := commitReplay(ctx, r, plan); err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	return writeReplayPlan(a.stdout, *output, plan, claims, "done", "rewound: the consumer reads the covered records again when it starts")
}

// commitReplay commits plan, between the failpoints "replay-planned" and
// "replay-committed" of a faults build's crash tests.
func commitReplay(ctx context.Context, r adapters.Replayer, plan adapters.ReplayPlan) error {
	failpoint.Hit("replay-planned")
	if err := r.CommitReplay(ctx, plan); err != nil {
		return err
	}
	failpoint.Hit("replay-committed")
	return nil
}

// notReplayable explains why a broker of kind cannot replay.
func notReplayable(kind string) error {
	switch kind {
	case "rabbitmq", "sqs", "memory":
		return fmt.Errorf("replay: %s is a queue: a message is removed once acked, so there is no position to rewind; run failed messages again with oncely dlq redrive, or publish the messages again", kind)
	}
	return fmt.Errorf("replay: not supported on %s (Kafka, NATS JetStream and Redis Streams are)", kind)
}

// replayJSON is replay's --output json document.
type replayJSON struct {
	adapters.ReplayPlan
	Status  string `json:"status"` // plan, done
	Covered int64  `json:"covered"`
	// Claimed counts the covered records with a claim per partition (set
	// with --database-url), ClaimedTotal over all.
	Claimed      map[int32]int64 `json:"claimed,omitempty"`
	ClaimedTotal *int64          `json:"claimed_total,omitempty"`
	// ClaimsDeleted counts the claims --reprocess deleted.
	ClaimsDeleted *int64 `json:"claims_deleted,omitempty"`
	// AuditID is the console_audit row --reprocess wrote.
	AuditID int64 `json:"audit_id,omitempty"`
}

func replayDoc(plan adapters.ReplayPlan, claims *replayplan.Claims, status string) replayJSON {
	doc := replayJSON{ReplayPlan: plan, Status: status, Covered: plan.Covered()}
	if doc.Members == nil {
		doc.Members = []string{}
	}
	if claims != nil {
		doc.Claimed, doc.ClaimedTotal = claims.PerPartition, &claims.Total
	}
	return doc
}

// writeReplayPlan prints plan (and the claims counted) as text or JSON.
func writeReplayPlan(w io.Writer, output string, plan adapters.ReplayPlan, claims *replayplan.Claims, status, last string) error {
	if output == "json" {
		return writeJSON(w, replayDoc(plan, claims, status))
	}
	fmt.Fprintf(w, "%s: replay of source %s, consumer %s (%s) to %s: %d records covered\n", status, safeLine(plan.Source), safeLine(plan.Consumer), plan.Broker, safeLine(plan.To), plan.Covered())
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "PARTITION\tCOMMITTED\tTARGET\tCOVERED"
	if claims != nil {
		head += "\tCLAIMED"
	}
	fmt.Fprintln(tw, head+"\tNOTE")
	for _, p := range plan.Partitions {
		committed := "-"
		if p.Committed >= 0 {
			committed = fmt.Sprint(p.Committed)
		}
		target := fmt.Sprint(p.Target)
		if p.PositionID != "" { // a Redis stream: entry IDs
			committed, target = p.PositionID, p.TargetID
		}
		line := fmt.Sprintf("%d\t%s\t%s\t%d", p.Partition, safeLine(committed), safeLine(target), p.Covered)
		if claims != nil {
			line += fmt.Sprintf("\t%d", claims.PerPartition[p.Partition])
		}
		note := ""
		if p.EarliestAvailable {
			note = fmt.Sprintf("target before the oldest record kept (retention): starts at the earliest available, offset %d", p.LogStart)
			if p.PositionID != "" {
				note = "target before the oldest entry kept (trimmed): starts at the earliest available entry"
			}
		}
		fmt.Fprintln(tw, line+"\t"+note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if claims != nil {
		fmt.Fprintf(w, "%d of the %d covered records have a claim of consumer %s: with deduplication on they are skipped unless --reprocess deletes their claims\n", claims.Total, plan.Covered(), safeLine(plan.Consumer))
	}
	if len(plan.Members) > 0 {
		fmt.Fprintf(w, "the group has %d live members, and the replay is refused until they stop: %s\n", len(plan.Members), safeLine(fmt.Sprint(plan.Members)))
	}
	fmt.Fprintln(w, last)
	return nil
}

// replayProgress prints, on a terminal, how many covered records were read,
// at most every 200ms.
type replayProgress struct {
	w     io.Writer
	on    bool
	what  string
	total int64
	done  int64
	last  time.Time
}

func (p *replayProgress) add(n int) {
	p.done += int64(n)
	if !p.on || time.Since(p.last) < 200*time.Millisecond {
		return
	}
	p.last = time.Now()
	fmt.Fprintf(p.w, "\r%s: %d/%d records", p.what, p.done, p.total)
}

func (p *replayProgress) finish() {
	if p.on && !p.last.IsZero() {
		fmt.Fprintln(p.w)
	}
}
