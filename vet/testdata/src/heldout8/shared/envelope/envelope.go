// Package envelope decodes the organisation's event envelope.
package envelope

import (
	"encoding/json"
	"fmt"

	"github.com/oncely/oncely/consumer"
)

// Envelope is the outer shape of every event on the buses.
type Envelope struct {
	Type    string          `json:"type"`
	Version int             `json:"version"`
	Data    json.RawMessage `json:"data"`
}

// Open decodes msg's envelope and its data into v; a malformed body is a
// permanent error.
func Open(msg *consumer.Message, v any) (Envelope, error) {
	var env Envelope
	if err := json.Unmarshal(msg.Body, &env); err != nil {
		return env, consumer.Permanent(fmt.Errorf("envelope of %s: %w", msg.ID, err))
	}
	if v != nil {
		if err := json.Unmarshal(env.Data, v); err != nil {
			return env, consumer.Permanent(fmt.Errorf("%s data of %s: %w", env.Type, msg.ID, err))
		}
	}
	return env, nil
}

// Seal wraps data into an envelope body.
func Seal(typ string, data any) ([]byte, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	return json.Marshal(Envelope{Type: typ, Version: 1, Data: raw})
}
