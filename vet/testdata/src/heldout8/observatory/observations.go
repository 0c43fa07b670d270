// Package observatory files telescope observations in batches, checked
// against the star catalogue.
package observatory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type observation struct {
	Telescope   string  `json:"telescope"`
	Designation string  `json:"designation"`
	Magnitude   float64 `json:"magnitude"`
	Exposure    float64 `json:"exposure_s"`
}

// rowsOf feeds observations to CopyFrom.
type rowsOf struct {
	obs []observation
	i   int
}

func (r *rowsOf) Next() bool { r.i++; return r.i <= len(r.obs) }

// Filer is the batch handler.
type Filer struct {
	catalog  *starCatalog
	archive  *sql.DB // the replica's pool, kept for the nightly report
	maxDelta float64
}

func (f *Filer) check(ctx context.Context, o observation) (bool, error) {
	s, err := f.catalog.lookup(ctx, o.Designation)
	if errors.Is(err, errUnknownStar) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	d := o.Magnitude - s.Magnitude
	return d < f.maxDelta && d > -f.maxDelta, nil
}

func (f *Filer) variableCandidates(ctx context.Context) (int, error) {
	var n int
	err := f.archive.QueryRowContext(ctx, `SELECT count(*) FROM variable_candidates`).Scan(&n)
	return n, err
}

// FileBatch copies the batch's plausible observations and flags the others.
func (f *Filer) FileBatch(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	var keep []observation
	for _, m := range msgs {
		var o observation
		if err := json.Unmarshal(m.Body, &o); err != nil {
			return consumer.Permanent(err)
		}
		ok, err := f.check(ctx, o)
		if err != nil {
			return err
		}
		if !ok {
			if _, err := tx.Exec(ctx, `INSERT INTO variable_candidates (designation, magnitude, telescope) VALUES ($1, $2, $3)`,
				o.Designation, o.Magnitude, o.Telescope); err != nil {
				return err
			}
			continue
		}
		keep = append(keep, o)
	}
	if len(keep) == 0 {
		return nil
	}
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"observations"}, []string{"telescope", "designation", "magnitude", "exposure_s"}, &rowsOf{obs: keep})
	return err
}
