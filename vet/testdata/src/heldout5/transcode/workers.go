// Package transcode records upload events and hands renditions to a worker pool.
package transcode

import (
	"context"
	"log/slog"
)

type job struct {
	ctx       context.Context
	assetID   string
	rendition string
}

// Pool runs rendition jobs on a fixed number of workers.
type Pool struct {
	jobs chan job
	log  *slog.Logger
}

// NewPool starts n workers.
func NewPool(n int, log *slog.Logger) *Pool {
	p := &Pool{jobs: make(chan job, 64), log: log}
	for i := 0; i < n; i++ {
		go p.work()
	}
	return p
}

func (p *Pool) work() {
	for j := range p.jobs {
		if err := render(j.ctx, j.assetID, j.rendition); err != nil {
			p.log.Error("render", "asset", j.assetID, "rendition", j.rendition, "err", err)
		}
	}
}

func render(ctx context.Context, assetID, rendition string) error { return ctx.Err() }
