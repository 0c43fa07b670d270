// Package regatta is the race office: it records finishes, ranks them and
// announces standings; the start button in the office's UI announces
// starts directly.
package regatta

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"

	"heldout8/regatta/notify"
	"heldout8/regatta/race"
)

// Office holds the race office's use cases.
type Office struct {
	live     race.Announcer
	inTx     func(pgx.Tx) race.Announcer
	loadRace func(ctx context.Context, tx pgx.Tx, raceID, class string) ([]race.Finish, error)
}

// NewOffice returns the office; live announces the office's own actions.
func NewOffice(live race.Announcer) *Office {
	return &Office{
		live:     live,
		inTx:     func(tx pgx.Tx) race.Announcer { return notify.InTx(tx) },
		loadRace: finishesOf,
	}
}

func finishesOf(ctx context.Context, tx pgx.Tx, raceID, class string) ([]race.Finish, error) {
	var raw []byte
	err := tx.QueryRow(ctx, `SELECT coalesce(json_agg(f), '[]') FROM finishes f WHERE race_id = $1 AND class = $2`, raceID, class).Scan(&raw)
	if err != nil {
		return nil, err
	}
	var fs []race.Finish
	return fs, json.Unmarshal(raw, &fs)
}

// RecordFinish is the consumer's handler.
func (o *Office) RecordFinish(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var f race.Finish
	if err := json.Unmarshal(msg.Body, &f); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO finishes (race_id, boat, class, time) VALUES ($1, $2, $3, $4)`,
		f.RaceID, f.Boat, f.Class, f.Time); err != nil {
		return err
	}
	fs, err := o.loadRace(ctx, tx, f.RaceID, f.Class)
	if err != nil {
		return err
	}
	return o.inTx(tx).Standings(ctx, f.RaceID, f.Class, race.Rank(fs))
}

// ServeHTTP is the office UI's start button: POST /start?race=ID.
func (o *Office) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	if err := o.live.StartSignal(r.Context(), r.URL.Query().Get("race"), time.Now()); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}
