// Package domain holds billing's records.
package domain

// Invoice is one invoice row.
type Invoice struct {
	ID      string
	OrderID string
	Total   int64
}

// Table names the invoice table.
func (Invoice) Table() string { return "invoices" }

// Values lists the row's columns in insert order.
func (i Invoice) Values() []any { return []any{i.ID, i.OrderID, i.Total} }

// Line is one invoice line.
type Line struct {
	InvoiceID string
	SKU       string
	Amount    int64
}

// Table names the line table.
func (Line) Table() string { return "invoice_lines" }

// Values lists the row's columns in insert order.
func (l Line) Values() []any { return []any{l.InvoiceID, l.SKU, l.Amount} }
