// Package startpos parses where a new consumer of a log broker (Kafka, NATS
// JetStream, Redis Streams) starts: the Config.Start field and the start=
// URL parameter of those adapters share its words.
package startpos

import (
	"fmt"
	"time"
)

// Words a start position is written with, besides an RFC 3339 time.
const (
	Earliest = "earliest"
	Latest   = "latest"
)

// Position is a parsed start position. The zero value is Earliest.
type Position struct {
	// Latest starts after the last message present when the consumer is
	// created.
	Latest bool
	// Time, when not zero, starts at the first message stored at or after it.
	Time time.Time
}

// Earliest reports whether p starts at the oldest message kept.
func (p Position) Earliest() bool { return !p.Latest && p.Time.IsZero() }

// Parse reads s: "" or "earliest", "latest", or an RFC 3339 time such as
// 2026-12-07T03:00:00Z.
func Parse(s string) (Position, error) {
	switch s {
	case "", Earliest:
		return Position{}, nil
	case Latest:
		return Position{Latest: true}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return Position{}, fmt.Errorf("start %q: want earliest, latest or an RFC 3339 time such as 2026-12-07T03:00:00Z", s)
	}
	return Position{Time: t}, nil
}
