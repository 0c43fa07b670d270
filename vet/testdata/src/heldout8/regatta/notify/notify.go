// Package notify holds the two Announcer adapters: live, on JetStream, for
// the race office's own actions; and through the outbox, for consumers.
package notify

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"

	"heldout8/regatta/race"
)

type standings struct {
	RaceID    string          `json:"race_id"`
	Class     string          `json:"class"`
	Standings []race.Standing `json:"standings"`
}

type startSignal struct {
	RaceID string    `json:"race_id"`
	At     time.Time `json:"at"`
}

// Live publishes on JetStream at once.
type Live struct {
	js nats.JetStreamContext
}

// NewLive returns a live announcer.
func NewLive(js nats.JetStreamContext) *Live { return &Live{js: js} }

// Standings publishes the standings.
func (l *Live) Standings(ctx context.Context, raceID, class string, s []race.Standing) error {
	data, err := json.Marshal(standings{RaceID: raceID, Class: class, Standings: s})
	if err != nil {
		return err
	}
	_, err = l.js.Publish("regatta.standings."+class, data)
	return err
}

// StartSignal publishes a start.
func (l *Live) StartSignal(ctx context.Context, raceID string, at time.Time) error {
	data, err := json.Marshal(startSignal{RaceID: raceID, At: at})
	if err != nil {
		return err
	}
	_, err = l.js.Publish("regatta.starts", data)
	return err
}

// Outboxed queues announcements in a transaction's outbox.
type Outboxed struct {
	tx pgx.Tx
}

// InTx returns an announcer writing to tx's outbox.
func InTx(tx pgx.Tx) *Outboxed { return &Outboxed{tx: tx} }

// Standings queues the standings.
func (o *Outboxed) Standings(ctx context.Context, raceID, class string, s []race.Standing) error {
	data, err := json.Marshal(standings{RaceID: raceID, Class: class, Standings: s})
	if err != nil {
		return err
	}
	return outbox.Send(ctx, o.tx, "regatta.standings", &consumer.Message{Key: raceID + "/" + class, Body: data})
}

// StartSignal queues a start.
func (o *Outboxed) StartSignal(ctx context.Context, raceID string, at time.Time) error {
	data, err := json.Marshal(startSignal{RaceID: raceID, At: at})
	if err != nil {
		return err
	}
	return outbox.Send(ctx, o.tx, "regatta.starts", &consumer.Message{Key: raceID, Body: data})
}
