// Package flags serves feature flags from a snapshot refreshed in the
// background; lookups never block on the network.
package flags

import (
	"sync/atomic"
)

// Set is an immutable snapshot of flag values.
type Set map[string]bool

// Client answers flag lookups from its latest snapshot.
type Client struct {
	current atomic.Pointer[Set]
}

// NewClient returns a Client that serves initial until Update is called.
func NewClient(initial Set) *Client {
	c := &Client{}
	c.current.Store(&initial)
	return c
}

// Enabled reports whether name is on in the latest snapshot.
func (c *Client) Enabled(name string) bool {
	s := c.current.Load()
	return s != nil && (*s)[name]
}

// Update replaces the snapshot.
func (c *Client) Update(s Set) { c.current.Store(&s) }
