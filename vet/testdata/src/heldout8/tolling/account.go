// Package tolling charges toll accounts for gantry passages, event-sourced.
package tolling

import (
	"encoding/json"
	"errors"

	"heldout8/tolling/eventstore"
)

var errInsufficient = errors.New("insufficient balance")

// account is the aggregate; its state is the fold of its events.
type account struct {
	ID      string
	Version int
	Balance int64
}

type charged struct {
	Gantry string `json:"gantry"`
	Cents  int64  `json:"cents"`
}

type toppedUp struct {
	Cents int64 `json:"cents"`
}

func (a *account) charge(gantry string, cents int64) ([]eventstore.Event, error) {
	if a.Balance < cents {
		return nil, errInsufficient
	}
	a.Balance -= cents
	return []eventstore.Event{event("PassageCharged", charged{Gantry: gantry, Cents: cents})}, nil
}

func (a *account) topUp(cents int64) []eventstore.Event {
	a.Balance += cents
	return []eventstore.Event{event("AccountToppedUp", toppedUp{Cents: cents})}
}

func event(typ string, v any) eventstore.Event {
	data, _ := json.Marshal(v)
	return eventstore.Event{Type: typ, Data: data}
}
