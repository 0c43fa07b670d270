package shipments

import (
	"net/http"

	"heldout9/shipping/carrier"
)

type carrierClient = carrier.Client

func newCarrier(url string, hc *http.Client) *carrier.Client { return carrier.New(url, hc) }
