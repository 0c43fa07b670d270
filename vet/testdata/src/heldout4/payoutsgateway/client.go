package payoutsgateway

import (
	"net/http"
	"time"
)

// psp holds the payment service provider's API settings.
type psp struct {
	base   string
	apiKey string
	http   *http.Client
}

func newPSP(base, apiKey string) *psp {
	return &psp{base: base, apiKey: apiKey, http: &http.Client{Timeout: 10 * time.Second}}
}
