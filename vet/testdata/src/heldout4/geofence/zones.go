package geofence

import (
	"context"
	"math"
)

// zone is a circular geofence around a depot or customer site.
type zone struct {
	ID       string
	Lat, Lon float64
	RadiusM  float64
}

type point struct{ Lat, Lon float64 }

// inside reports whether p lies in z, by haversine distance.
func inside(ctx context.Context, z zone, p point) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	const earth = 6371000.0
	rad := math.Pi / 180
	dLat := (p.Lat - z.Lat) * rad
	dLon := (p.Lon - z.Lon) * rad
	a := math.Sin(dLat/2)*math.Sin(dLat/2) + math.Cos(z.Lat*rad)*math.Cos(p.Lat*rad)*math.Sin(dLon/2)*math.Sin(dLon/2)
	return 2*earth*math.Asin(math.Sqrt(a)) <= z.RadiusM, nil
}
