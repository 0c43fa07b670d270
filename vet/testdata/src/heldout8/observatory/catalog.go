package observatory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// starCatalog answers lookups from the read-only replica of the star
// catalogue, another team's database.
type starCatalog struct {
	byDesignation *sql.Stmt
}

func openCatalog(ctx context.Context, replica *sql.DB) (*starCatalog, error) {
	stmt, err := replica.PrepareContext(ctx, `SELECT ra, dec, magnitude FROM stars WHERE designation = $1`)
	if err != nil {
		return nil, fmt.Errorf("prepare catalogue lookup: %w", err)
	}
	return &starCatalog{byDesignation: stmt}, nil
}

type star struct {
	RA, Dec, Magnitude float64
}

var errUnknownStar = errors.New("not in the catalogue")

func (c *starCatalog) lookup(ctx context.Context, designation string) (star, error) {
	var s star
	err := c.byDesignation.QueryRowContext(ctx, designation).Scan(&s.RA, &s.Dec, &s.Magnitude)
	if errors.Is(err, sql.ErrNoRows) {
		return s, fmt.Errorf("%s: %w", designation, errUnknownStar)
	}
	return s, err
}
