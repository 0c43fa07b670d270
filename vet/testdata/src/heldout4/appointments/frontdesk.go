package appointments

import (
	"net/http"

	"heldout4/appointments/apptdb"
)

// FrontDesk serves the reception's HTTP endpoints.
type FrontDesk struct {
	Q *apptdb.Queries
}

// Cancel handles POST /appointments/{id}/cancel.
func (f *FrontDesk) Cancel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := f.Q.CancelAppointment(r.Context(), id, r.FormValue("reason")); err != nil {
		http.Error(w, "cancel failed", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
