// Package sawmill turns finished cutting jobs into order updates and stock
// movements.
package sawmill

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/store/postgres"

	"heldout7/internal/lumberyard"
)

// stockKeeper moves boards in and out of stock.
type stockKeeper interface {
	Adjust(ctx context.Context, sku string, delta int) error
	Count(ctx context.Context, sku string) (int, error)
}

// container holds everything the sawmill's handlers need, built once.
type container struct {
	log    *slog.Logger
	store  *postgres.Store
	orders *lumberyard.Orders
	stock  stockKeeper
}

func buildContainer(pool *pgxpool.Pool, log *slog.Logger) (*container, error) {
	st, err := postgres.New(pool)
	if err != nil {
		return nil, err
	}
	return &container{
		log:    log,
		store:  st,
		orders: lumberyard.NewOrders(pool),
		stock:  lumberyard.NewStock(pool),
	}, nil
}
