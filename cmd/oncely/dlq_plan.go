package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/internal/redriveplan"
	"github.com/oncely/oncely/store/postgres"
)

// planShown is how many dead letters a text plan lists one by one.
const planShown = 50

// redrivePlan is dlq redrive --plan's --output json document.
type redrivePlan struct {
	Source   string `json:"source"`
	Consumer string `json:"consumer"`
	Broker   string `json:"broker"`
	// Seen counts the dead letters looked at, Selected those the filters
	// select (after --limit).
	Seen     int `json:"seen"`
	Selected int `json:"selected"`
	// Applied are the selected IDs with an idempotency claim of the
	// consumer: their handler committed, and a redrive is a no-op for them.
	// NotApplied are the rest: a redrive runs their handler.
	Applied    []string `json:"applied"`
	NotApplied []string `json:"not_applied"`
}

// planRedrive reports what dlq redrive would do with opts, telling apart
// the dead letters already applied (their claim exists in the Postgres store
// of db) from those not (redriveplan.Make); it changes nothing.
func planRedrive(ctx context.Context, a *app, br adapters.Broker, bf brokerFlags, opts adapters.RedriveOptions, db dbFlags, output string) error {
	pool, err := db.open(ctx, a, "dlq redrive --plan")
	if err != nil {
		return err
	}
	defer pool.Close()
	st, err := postgres.New(pool, postgres.Config{Schema: *db.schema, NoPruning: true})
	if err != nil {
		return fmt.Errorf("dlq redrive --plan: %w", err)
	}
	defer st.Close(ctx)
	plan, err := redriveplan.Make(ctx, br, st, bf.source, bf.consumer, opts)
	if err != nil {
		return sourceErr("dlq redrive --plan", err)
	}
	if output == "json" {
		return writeJSON(a.stdout, redrivePlan{Source: plan.Source, Consumer: plan.Consumer, Broker: br.Kind(), Seen: plan.Seen,
			Selected: plan.Selected, Applied: plan.Applied, NotApplied: plan.NotApplied})
	}
	fmt.Fprintf(a.stdout, "plan: redrive %d of %d dead letters of source %s, consumer %s back to %s\n", plan.Selected, plan.Seen, safeLine(bf.source), safeLine(bf.consumer), safeLine(bf.source))
	fmt.Fprintf(a.stdout, "  %d already applied (a claim exists: the redrive is a no-op for them)\n", len(plan.Applied))
	fmt.Fprintf(a.stdout, "  %d not applied (the redrive runs their handler)\n", len(plan.NotApplied))
	if plan.Selected > 0 {
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tREASON\tAPPLIED\tERROR")
		shown := 0
		for _, id := range plan.IDs {
			if shown == planShown {
				fmt.Fprintf(tw, "… and %d more (--output json lists every ID)\n", plan.Selected-planShown)
				break
			}
			shown++
			applied := "no"
			if plan.IsApplied(id) {
				applied = "yes"
			}
			d := plan.Letters[id]
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", safeLine(id), safeLine(orDash(d.Reason())), applied, oneLine(d.Error(), 60))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(a.stdout, "nothing was changed; run without --plan to redrive")
	return nil
}
