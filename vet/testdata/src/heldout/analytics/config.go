package analytics

import (
	"fmt"
	"os"
	"strconv"
)

// Config is read from the environment at start-up.
type Config struct {
	PageViewsSource string
	OrdersSource    string
	Concurrency     int
}

// LoadConfig reads ANALYTICS_* variables, with defaults.
func LoadConfig() (Config, error) {
	cfg := Config{PageViewsSource: "web.page_views", OrdersSource: "orders.placed", Concurrency: 8}
	if v := os.Getenv("ANALYTICS_PAGE_VIEWS_SOURCE"); v != "" {
		cfg.PageViewsSource = v
	}
	if v := os.Getenv("ANALYTICS_CONCURRENCY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return Config{}, fmt.Errorf("ANALYTICS_CONCURRENCY: %w", err)
		}
		cfg.Concurrency = n
	}
	return cfg, nil
}
