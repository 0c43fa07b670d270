// Package commission is the atelier's domain: commissioned pieces moving
// through the workshop.
package commission

import (
	"context"
	"fmt"
)

// Stage is where a piece is in the workshop.
type Stage string

// The stages a piece moves through, in order.
const (
	Sketched  Stage = "sketched"
	Cut       Stage = "cut"
	Assembled Stage = "assembled"
	Finished  Stage = "finished"
)

var order = map[Stage]int{Sketched: 0, Cut: 1, Assembled: 2, Finished: 3}

// Advance checks that to follows from.
func Advance(from, to Stage) error {
	if order[to] != order[from]+1 {
		return fmt.Errorf("piece cannot go from %s to %s", from, to)
	}
	return nil
}

// StageReached is announced when a piece reaches a stage.
type StageReached struct {
	PieceID string `json:"piece_id"`
	Client  string `json:"client"`
	Stage   Stage  `json:"stage"`
}

// EventPublisher announces domain events to other services.
type EventPublisher interface {
	Publish(ctx context.Context, topic, key string, event any) error
}
