// Package metrics holds in-process counters scraped by the platform agent.
package metrics

import (
	"sync"
)

// Counter is a labelled monotonic counter.
type Counter struct {
	mu     sync.Mutex
	name   string
	values map[string]float64
}

// NewCounter returns a counter called name.
func NewCounter(name string) *Counter {
	return &Counter{name: name, values: map[string]float64{}}
}

// Add adds v to the series with the given label value.
func (c *Counter) Add(label string, v float64) {
	c.mu.Lock()
	c.values[label] += v
	c.mu.Unlock()
}

// Inc adds one.
func (c *Counter) Inc(label string) { c.Add(label, 1) }
