package benchtest

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
)

// JSONWork reports whether ONCELY_BENCH_HANDLER=json asks the adapters'
// BenchmarkObservability for the realistic handler (Work) and JSON bodies
// (OrderJSON) instead of its default no-op handler.
func JSONWork() bool { return os.Getenv("ONCELY_BENCH_HANDLER") == "json" }

// Order is the document a realistic handler decodes: an order of a few
// lines, about 1 KB of JSON (OrderJSON).
type Order struct {
	ID       string      `json:"id"`
	Customer string      `json:"customer"`
	Email    string      `json:"email"`
	Currency string      `json:"currency"`
	Created  string      `json:"created"`
	Status   string      `json:"status"`
	Notes    string      `json:"notes"`
	Tags     []string    `json:"tags"`
	Address  Address     `json:"address"`
	Lines    []OrderLine `json:"lines"`
}

// Address is where an Order goes.
type Address struct {
	Street   string `json:"street"`
	City     string `json:"city"`
	Postcode string `json:"postcode"`
	Country  string `json:"country"`
}

// OrderLine is one line of an Order.
type OrderLine struct {
	SKU      string  `json:"sku"`
	Name     string  `json:"name"`
	Quantity int     `json:"quantity"`
	Price    float64 `json:"price"`
}

// OrderJSON returns order i encoded as JSON, 1,000–1,100 bytes, for a
// customer among 1,000.
func OrderJSON(i int) []byte {
	o := Order{
		ID: fmt.Sprintf("order-%09d", i), Customer: fmt.Sprintf("customer-%04d", i%1000),
		Email: fmt.Sprintf("customer-%04d@example.com", i%1000), Currency: "EUR",
		Created: "2026-12-07T04:51:06.123456Z", Status: "paid",
		Notes:   strings.Repeat("leave at the door ", 26),
		Tags:    []string{"priority", "gift", "newsletter"},
		Address: Address{Street: "12 Long Street", City: "Amsterdam", Postcode: "1012 AB", Country: "NL"},
	}
	for l := range 3 {
		o.Lines = append(o.Lines, OrderLine{SKU: fmt.Sprintf("SKU-%06d", (i+l)%100000),
			Name: "stainless steel water bottle 750 ml", Quantity: 1 + l, Price: 12.5 + float64(l)})
	}
	b, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	return b
}

// Work is a realistic handler's effect: it decodes an order and adds its
// total to its customer's under a mutex shared by all handler goroutines.
type Work struct {
	mu     sync.Mutex
	totals map[string]float64
}

// Handle decodes body as an Order and updates the customer's total; it
// returns the decoding error.
func (w *Work) Handle(body []byte) error {
	var o Order
	if err := json.Unmarshal(body, &o); err != nil {
		return fmt.Errorf("decode order: %w", err)
	}
	var total float64
	for _, l := range o.Lines {
		total += float64(l.Quantity) * l.Price
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.totals == nil {
		w.totals = make(map[string]float64)
	}
	w.totals[o.Customer] += total
	return nil
}
