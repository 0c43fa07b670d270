package tramway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

type scheduled struct {
	Stop      string    `json:"stop"`
	Departure time.Time `json:"departure"`
}

// scheduledDeparture asks the timetable service when a run was due to leave a stop.
func (d *Dispatcher) scheduledDeparture(ctx context.Context, run, stop string) (time.Time, error) {
	u := d.cfg.TimetableURL + "/v2/runs/" + url.PathEscape(run) + "/stops/" + url.PathEscape(stop)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return time.Time{}, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := d.client.Do(req)
	if err != nil {
		return time.Time{}, fmt.Errorf("timetable: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return time.Time{}, fmt.Errorf("timetable: %s", resp.Status)
	}
	var s scheduled
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return time.Time{}, err
	}
	return s.Departure, nil
}
