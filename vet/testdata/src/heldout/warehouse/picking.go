// Package warehouse allocates bins to orders when they are released for
// picking.
package warehouse

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"

	"heldout/platform/pipeline"
	"heldout/warehouse/internal/gen"
)

// Picking allocates bins.
type Picking struct {
	queries *gen.Queries
}

// New returns Picking with pool-bound queries for its read API.
func New(pool *pgxpool.Pool) *Picking { return &Picking{queries: gen.New(pool)} }

type orderReleased struct {
	OrderID string `json:"order_id"`
	Picks   []struct {
		Bin   string `json:"bin"`
		Units int32  `json:"units"`
	} `json:"picks"`
}

func (p *Picking) allocate(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev orderReleased
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	q := p.queries.WithTx(tx)
	for _, pk := range ev.Picks {
		n, err := q.DecrementBin(ctx, gen.DecrementBinParams{ID: pk.Bin, Units: pk.Units})
		if err != nil {
			return err
		}
		if n == 0 {
			return consumer.Permanent(fmt.Errorf("bin %s short of %d units", pk.Bin, pk.Units))
		}
		if err := q.InsertPick(ctx, gen.InsertPickParams{OrderID: ev.OrderID, BinID: pk.Bin, Units: pk.Units}); err != nil {
			return err
		}
	}
	return nil
}

// BinHandler serves GET /bins/{id} from the pool.
func (p *Picking) BinHandler(w http.ResponseWriter, r *http.Request) {
	units, err := p.queries.BinUnits(r.Context(), r.PathValue("id"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	_, _ = w.Write([]byte(strconv.Itoa(int(units))))
}

// Run consumes orders.released.
func (p *Picking) Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	return pipeline.Run(ctx, broker, st, pipeline.Spec{Source: "orders.released", Name: "picking", Handler: postgres.HandlerFunc(p.allocate)})
}
