package kycreview

import (
	"encoding/json"
	"net/http"

	"heldout4/kycreview/customers"
)

// riskHandler serves GET /customers/{id}/risk for the back office.
func riskHandler(repo *customers.Repo) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		lvl, err := repo.RiskLevel(r.Context(), r.PathValue("id"))
		if err != nil {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"risk_level": lvl})
	}
}
