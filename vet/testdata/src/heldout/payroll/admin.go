package payroll

import (
	"net/http"
)

// Admin serves the payroll back-office API.
type Admin struct {
	store Store
}

// Approve handles POST /runs/{id}/approve. It runs in its own request,
// not in a message handler, so it writes through the pool.
func (a *Admin) Approve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if err := a.store.ApproveRun(r.Context(), r.PathValue("id"), r.Header.Get("X-User")); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
