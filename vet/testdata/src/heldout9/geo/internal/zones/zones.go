// Package zones reads delivery zones through database/sql.
package zones

import (
	"context"
	"database/sql"
)

// Lookup finds the zone of a point.
type Lookup struct{ DB *sql.DB }

// ZoneOf returns the zone containing (lat, lon).
func (l *Lookup) ZoneOf(ctx context.Context, lat, lon float64) (string, error) {
	var z string
	err := l.DB.QueryRowContext(ctx, `SELECT id FROM zones WHERE ST_Contains(area, ST_Point($2, $1)) LIMIT 1`, lat, lon).Scan(&z)
	return z, err
}
