package observatory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type proposal struct {
	ID        string    `json:"id"`
	Target    string    `json:"target"`
	Night     time.Time `json:"night"`
	Minutes   int       `json:"minutes"`
	Telescope string    `json:"telescope"`
}

type domePlan struct {
	Telescope string    `json:"telescope"`
	Target    string    `json:"target"`
	Start     time.Time `json:"start"`
	Minutes   int       `json:"minutes"`
}

func (s *Scheduler) schedule(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var p proposal
	if err := json.Unmarshal(msg.Body, &p); err != nil {
		return consumer.Permanent(err)
	}
	var start time.Time
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(ends_at), $2) FROM slots WHERE telescope = $1 AND night = $2 FOR UPDATE`,
		p.Telescope, p.Night).Scan(&start); err != nil {
		return fmt.Errorf("next slot: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO slots (proposal_id, telescope, night, starts_at, ends_at) VALUES ($1, $2, $3, $4, $5)`,
		p.ID, p.Telescope, p.Night, start, start.Add(time.Duration(p.Minutes)*time.Minute)); err != nil {
		return err
	}
	return s.pushPlan(ctx, domePlan{Telescope: p.Telescope, Target: p.Target, Start: start, Minutes: p.Minutes})
}

// pushPlan updates the dome controller's plan for the night.
func (s *Scheduler) pushPlan(ctx context.Context, plan domePlan) error {
	body, err := json.Marshal(plan)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, s.dome+"/v1/plan/"+plan.Telescope, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(req) // want "outbox"
	if err != nil {
		return fmt.Errorf("dome: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("dome: %s", resp.Status)
	}
	return nil
}
