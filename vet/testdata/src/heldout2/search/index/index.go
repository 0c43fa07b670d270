// Package index is the search service's client for its index cluster.
package index

import "context"

// Doc is one document in the index.
type Doc struct {
	ID   string
	Body []byte
}

// Client writes documents to the index.
type Client struct{ url string }

// New returns a client for the cluster at url.
func New(url string) *Client { return &Client{url: url} }

// Upsert replaces the document with doc.ID.
func (c *Client) Upsert(ctx context.Context, doc Doc) error { return nil }

// Delete removes the document id.
func (c *Client) Delete(ctx context.Context, id string) error { return nil }
