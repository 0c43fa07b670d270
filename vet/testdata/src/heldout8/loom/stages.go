package loom

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"github.com/oncely/oncely/consumer"
)

type rawRoll struct {
	i   int
	msg *consumer.Message
}

type parsedRoll struct {
	i    int
	roll fabricRoll
	err  error
}

type gradedRoll struct {
	parsedRoll
	grade string
}

// pipeline runs stages on goroutines of its own; wait returns when every
// stage has returned.
type pipeline struct {
	ctx context.Context
	wg  sync.WaitGroup
}

func (p *pipeline) stage(run func()) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		run()
	}()
}

func (p *pipeline) wait() { p.wg.Wait() }

// source emits the batch's messages; it stops early when ctx ends.
func (p *pipeline) source(msgs []*consumer.Message) <-chan rawRoll {
	ctx := p.ctx
	out := make(chan rawRoll)
	p.stage(func() {
		defer close(out)
		for i, m := range msgs {
			select {
			case out <- rawRoll{i: i, msg: m}:
			case <-ctx.Done():
				return
			}
		}
	})
	return out
}

// parse decodes each roll.
func (p *pipeline) parse(in <-chan rawRoll) <-chan parsedRoll {
	ctx := p.ctx
	out := make(chan parsedRoll)
	p.stage(func() {
		defer close(out)
		for r := range in {
			var fr fabricRoll
			err := json.Unmarshal(r.msg.Body, &fr)
			if err != nil {
				err = consumer.Permanent(err)
			}
			select {
			case out <- parsedRoll{i: r.i, roll: fr, err: err}:
			case <-ctx.Done():
				return
			}
		}
	})
	return out
}

// grade scores each roll's defects.
func (p *pipeline) grade(in <-chan parsedRoll) <-chan gradedRoll {
	ctx := p.ctx
	out := make(chan gradedRoll)
	p.stage(func() {
		defer close(out)
		for pr := range in {
			g := gradedRoll{parsedRoll: pr}
			if pr.err == nil {
				g.grade = gradeOf(pr.roll)
			}
			select {
			case out <- g:
			case <-ctx.Done():
				return
			}
		}
	})
	return out
}

func gradeOf(r fabricRoll) string {
	points := 0
	for _, d := range r.Defects {
		switch strings.ToLower(d) {
		case "hole", "stain":
			points += 4
		case "slub":
			points += 1
		default:
			points += 2
		}
	}
	perHundred := float64(points) * 100 / max(r.LengthM, 1)
	switch {
	case perHundred <= 20:
		return "A"
	case perHundred <= 40:
		return "B"
	default:
		return "C"
	}
}
