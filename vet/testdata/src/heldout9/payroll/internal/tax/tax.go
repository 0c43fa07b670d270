// Package tax computes withholding.
package tax

import "context"

// Table is a withholding table.
type Table struct{ Brackets []Bracket }

// Bracket is one band of a table.
type Bracket struct {
	Upto int64
	Rate float64
}

// Withhold returns the tax withheld on gross; it stops when ctx ends.
func (t Table) Withhold(ctx context.Context, gross int64) (int64, error) {
	var tax float64
	prev := int64(0)
	for _, b := range t.Brackets {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if gross <= prev {
			break
		}
		upto := min(gross, b.Upto)
		tax += float64(upto-prev) * b.Rate
		prev = b.Upto
	}
	return int64(tax), nil
}
