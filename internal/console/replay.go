package console

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/internal/replayplan"
)

// replayView is the replay page's data: the plan of a rewind of a log
// broker's consumer, or, on a queue broker, why replay does not apply.
type replayView struct {
	target
	Kind string
	// Applies: the broker is a log (Kafka, NATS JetStream, Redis Streams)
	// whose consumers can be rewound.
	Applies bool
	// To is the rewind's target as asked (default earliest).
	To     string
	Plan   adapters.ReplayPlan
	Claims *replayplan.Claims
	Rows   []replayRow
	// Confirm is what the rewind form needs typed, ReprocessConfirm what
	// the form that also forgets the claims of the range needs.
	Confirm, ReprocessConfirm string
}

// replayRow is one partition of the plan with its claims.
type replayRow struct {
	adapters.ReplayPartition
	// Committed and Target are offsets, sequences or Redis entry IDs.
	Committed, Target string
	Claimed           int64
}

// replayPage shows what oncely replay --plan shows for the consumer: per
// partition the committed position, the target, the records covered and
// how many of them have a claim of the consumer. It changes nothing; unless
// the console is read-only it offers the rewind (a POST, see rewind).
func (s *Server) replayPage(w http.ResponseWriter, r *http.Request) error {
	t := targetOf(r)
	v := replayView{target: t, Kind: s.cfg.Broker.Kind(), To: r.URL.Query().Get("to"), Confirm: replayConfirmWord, ReprocessConfirm: reprocessConfirmWord}
	if v.To == "" {
		v.To = "earliest"
	}
	rp, ok := adapters.AsReplayer(s.cfg.Broker)
	if !ok {
		s.render(w, r, http.StatusOK, "replay", "Replay of "+t.Consumer, v)
		return nil
	}
	v.Applies = true
	to, err := adapters.ParseReplayTarget(v.To)
	if err != nil {
		return httpErrorf(http.StatusBadRequest, "to: %v", err)
	}
	plan, err := rp.PlanReplay(r.Context(), t.Source, t.Consumer, to)
	if errors.Is(err, adapters.ErrNoSource) {
		return httpErrorf(http.StatusNotFound, "%v", err)
	}
	if errors.Is(err, adapters.ErrNoConsumer) {
		return noConsumer(err, v.Kind)
	}
	if err != nil {
		return err
	}
	claims, err := replayplan.Count(r.Context(), rp, plan, s.cfg.Pool, s.cfg.Schema, nil)
	if err != nil {
		return fmt.Errorf("replay plan: %w", err)
	}
	v.Plan, v.Claims = plan, claims
	for _, p := range plan.Partitions {
		row := replayRow{ReplayPartition: p, Committed: "-", Target: fmt.Sprint(p.Target), Claimed: claims.PerPartition[p.Partition]}
		if p.Committed >= 0 {
			row.Committed = fmt.Sprint(p.Committed)
		}
		if p.PositionID != "" { // a Redis stream: entry IDs
			row.Committed, row.Target = p.PositionID, p.TargetID
		}
		v.Rows = append(v.Rows, row)
	}
	s.render(w, r, http.StatusOK, "replay", "Replay of "+t.Consumer, v)
	return nil
}
