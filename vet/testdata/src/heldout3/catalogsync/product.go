package catalogsync

import (
	"context"
	"encoding/json"
	"fmt"

	"heldout3/catalogsync/internal/table"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type product struct {
	SKU      string `json:"sku"`
	Title    string `json:"title"`
	Category string `json:"category"`
	Active   bool   `json:"active"`
}

func (product) TableName() string { return "products" }
func (product) Columns() []string { return []string{"sku", "title", "category", "active"} }
func (p product) Values() []any   { return []any{p.SKU, p.Title, p.Category, p.Active} }

func syncProduct(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var p product
	if err := json.Unmarshal(msg.Body, &p); err != nil {
		return consumer.Permanent(err)
	}
	if err := table.On[product](tx).Upsert(ctx, p); err != nil {
		return fmt.Errorf("catalogsync: product %s: %w", p.SKU, err)
	}
	return nil
}
