package console

import (
	"net/http"

	"github.com/oncely/oncely/outbox"
)

// outboxShown is the most outbox dead rows the outbox page lists.
const outboxShown = 200

// outboxView is the outbox page's data.
type outboxView struct {
	Schema string
	Rows   []outbox.DeadRow
	// More: the page shows outboxShown rows and there are more.
	More  bool
	Total int64
}

// outboxPage lists the outbox's dead rows, oldest first: rows the broker
// refused until the relay's attempts ran out, with the broker's reason.
// Read-only: oncely outbox redrive moves them back.
func (s *Server) outboxPage(w http.ResponseWriter, r *http.Request) error {
	rows, err := s.outboxDead.List(r.Context(), outbox.DeadFilter{Limit: outboxShown})
	if err != nil {
		return err
	}
	total, err := s.outboxDead.Count(r.Context())
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, "outbox", "Outbox dead rows",
		outboxView{Schema: s.outboxDead.Schema(), Rows: rows, More: total > int64(len(rows)), Total: total})
	return nil
}
