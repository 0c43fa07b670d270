package subtitles

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type trackEvent struct {
	TitleID string `json:"title_id"`
	Lang    string `json:"lang"`
	Key     string `json:"key"`
}

// Tracks handles subtitle track events.
type Tracks struct {
	base
}

func (t *Tracks) onAdded(ctx context.Context, tx pgx.Tx, ev trackEvent) error {
	vtt, err := t.fetchTrack(ctx, ev.Key)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO subtitle_tracks (title_id, lang, cue_bytes) VALUES ($1, $2, $3)`, ev.TitleID, ev.Lang, len(vtt)); err != nil {
		return err
	}
	return t.touchTitle(ctx, tx, ev.TitleID)
}

func (t *Tracks) onRemoved(ctx context.Context, tx pgx.Tx, ev trackEvent) error {
	if _, err := tx.Exec(ctx, `DELETE FROM subtitle_tracks WHERE title_id = $1 AND lang = $2`, ev.TitleID, ev.Lang); err != nil {
		return err
	}
	return t.touchTitle(ctx, tx, ev.TitleID)
}

func (t *Tracks) routes() map[string]func(context.Context, pgx.Tx, trackEvent) error {
	return map[string]func(context.Context, pgx.Tx, trackEvent) error{
		"subtitle.added":   t.onAdded,
		"subtitle.removed": t.onRemoved,
	}
}

func (t *Tracks) dispatch(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	fn, ok := t.routes()[msg.Headers["type"]]
	if !ok {
		return consumer.Permanent(fmt.Errorf("unknown event type %q", msg.Headers["type"]))
	}
	var ev trackEvent
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	return fn(ctx, tx, ev)
}
