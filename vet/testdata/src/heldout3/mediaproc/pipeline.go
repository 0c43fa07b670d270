package mediaproc

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
)

// renditionJob asks for the renditions of one uploaded asset, recorded in
// the transaction that stored the asset.
type renditionJob struct {
	tx      pgx.Tx
	assetID string
	width   int
	height  int
}

// pipeline renders assets on a fixed set of workers, so a burst of uploads
// does not start one goroutine per image.
type pipeline struct {
	jobs chan renditionJob
	log  *slog.Logger
}

func newPipeline(workers int, log *slog.Logger) *pipeline {
	p := &pipeline{jobs: make(chan renditionJob, workers*4), log: log}
	for i := 0; i < workers; i++ {
		go p.work()
	}
	return p
}

func (p *pipeline) work() {
	for j := range p.jobs {
		if err := p.render(j); err != nil {
			p.log.Error("rendition failed", "asset", j.assetID, "err", err)
		}
	}
}

var sizes = []int{160, 480, 1280}

func (p *pipeline) render(j renditionJob) error {
	ctx := context.Background()
	for _, w := range sizes {
		if w > j.width {
			break
		}
		h := j.height * w / j.width
		if _, err := j.tx.Exec(ctx,
			`INSERT INTO renditions (asset_id, width, height, state) VALUES ($1, $2, $3, 'pending')`,
			j.assetID, w, h); err != nil {
			return fmt.Errorf("mediaproc: rendition %dw of %s: %w", w, j.assetID, err)
		}
	}
	return nil
}

func (p *pipeline) close() { close(p.jobs) }
