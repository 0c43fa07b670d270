// Package race is the regatta's domain: boats crossing the finish line.
package race

import (
	"context"
	"sort"
	"time"
)

// Finish is a boat crossing the line.
type Finish struct {
	RaceID string        `json:"race_id"`
	Boat   string        `json:"boat"`
	Class  string        `json:"class"`
	Time   time.Duration `json:"time"`
}

// Standing is a boat's place in its class.
type Standing struct {
	Boat  string
	Place int
}

// Rank orders finishes by corrected time.
func Rank(fs []Finish) []Standing {
	sort.Slice(fs, func(i, j int) bool { return fs[i].Time < fs[j].Time })
	out := make([]Standing, len(fs))
	for i, f := range fs {
		out[i] = Standing{Boat: f.Boat, Place: i + 1}
	}
	return out
}

// Announcer tells the race office's screens and the sailors' app.
type Announcer interface {
	Standings(ctx context.Context, raceID, class string, s []Standing) error
	StartSignal(ctx context.Context, raceID string, at time.Time) error
}
