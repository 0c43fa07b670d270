package console

import (
	"cmp"
	"slices"
	"time"

	"github.com/oncely/oncely/adapters"
)

// Group is the dead letters sharing one Fingerprint.
type Group struct {
	Fingerprint
	// ID is Fingerprint.ID().
	ID string
	// Count is the number of message IDs, Copies the number of messages
	// (more when a destination holds a message twice).
	Count, Copies int
	// FirstSeen and LastSeen are the earliest and latest failure times.
	FirstSeen, LastSeen time.Time
	// Example is the error text of the group's first dead letter.
	Example string
	// LastHour and LastDay count the group's message IDs whose last
	// failure is at most an hour, a day before the now GroupLetters was
	// given: the trend beside Count.
	LastHour, LastDay int
}

// GroupLetters groups dls by fingerprint, most dead letters first, then
// the most recently failed; ties by ID. The trend (LastHour, LastDay) is
// counted back from now.
func GroupLetters(dls []adapters.DeadLetter, now time.Time) []Group {
	index := map[Fingerprint]int{}
	var out []Group
	for _, d := range dls {
		fp := FingerprintOf(d)
		i, ok := index[fp]
		if !ok {
			i = len(out)
			index[fp] = i
			out = append(out, Group{Fingerprint: fp, ID: fp.ID(), Example: d.Error()})
		}
		g := &out[i]
		g.Count++
		g.Copies += d.Copies
		if t := d.FailedAt(); !t.IsZero() {
			age := now.Sub(t)
			if age <= time.Hour {
				g.LastHour++
			}
			if age <= 24*time.Hour {
				g.LastDay++
			}
			if g.FirstSeen.IsZero() || t.Before(g.FirstSeen) {
				g.FirstSeen = t
			}
			if t.After(g.LastSeen) {
				g.LastSeen = t
			}
		}
	}
	slices.SortFunc(out, func(a, b Group) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), b.LastSeen.Compare(a.LastSeen), cmp.Compare(a.ID, b.ID))
	})
	return out
}
