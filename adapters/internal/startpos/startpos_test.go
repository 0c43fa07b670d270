package startpos

import (
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	at := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	for in, want := range map[string]Position{"": {}, "earliest": {}, "latest": {Latest: true}, "2026-12-07T03:00:00Z": {Time: at}} {
		got, err := Parse(in)
		if err != nil || got.Latest != want.Latest || !got.Time.Equal(want.Time) {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"newest", "2026-12-07", "0"} {
		if _, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) accepted", in)
		}
	}
}
