package crashtest

import (
	"slices"
	"time"
)

// Resume returns the median and the longest Kill.Resumed over the kills
// after which work was left: how long a SIGKILL stopped processing, the
// restart included. Both are zero when no kill left work.
func (r Result) Resume() (median, longest time.Duration) {
	var ds []time.Duration
	for _, k := range r.Kills {
		if k.Resumed > 0 {
			ds = append(ds, k.Resumed)
		}
	}
	if len(ds) == 0 {
		return 0, 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2], ds[len(ds)-1]
}

// formatResume prints d to 0.1s, or "-" for zero (nothing measured).
func formatResume(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return d.Round(100 * time.Millisecond).String()
}
