package orders

import (
	"encoding/json"
	"net/http"
)

// Routes serves the order API; it runs outside any consumer.
func (a *App) Routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders/{id}/total", func(w http.ResponseWriter, r *http.Request) {
		total, err := a.Queries.GetOrderTotal(r.Context(), r.PathValue("id"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]int64{"total_cents": total})
	})
	mux.HandleFunc("POST /orders/{id}/cancel", func(w http.ResponseWriter, r *http.Request) {
		if err := a.Queries.CancelOrder(r.Context(), r.PathValue("id")); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}
