// Package parcel is the courier's domain: scans of parcels along their route.
package parcel

import (
	"context"
	"errors"
	"time"
)

// ErrUnknownDepot is returned for a scan at a depot the network does not have.
var ErrUnknownDepot = errors.New("unknown depot")

// Scan is one barcode scan of a parcel.
type Scan struct {
	Barcode string    `json:"barcode"`
	Depot   string    `json:"depot"`
	Status  string    `json:"status"`
	At      time.Time `json:"at"`
}

// Delivered reports whether the scan closes the parcel's journey.
func (s Scan) Delivered() bool { return s.Status == "delivered" }

// Tracker is the port scans are recorded through.
type Tracker interface {
	RecordScan(ctx context.Context, s Scan) error
	CloseParcel(ctx context.Context, barcode string, at time.Time) error
}
