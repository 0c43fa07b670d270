package seismo

import (
	"context"
	"encoding/json"
	"math"
	"sync"

	"github.com/oncely/oncely/consumer"
)

type waveform struct {
	Station string    `json:"station"`
	EventID string    `json:"event_id"`
	Samples []float64 `json:"samples"`
	Gain    float64   `json:"gain"`
}

type pick struct {
	index     int
	station   string
	eventID   string
	amplitude float64
	magnitude float64
	err       error
}

// magnitudeOf is a local-magnitude estimate: CPU only.
func magnitudeOf(w waveform) (amp, ml float64) {
	for _, s := range w.Samples {
		amp = math.Max(amp, math.Abs(s/w.Gain))
	}
	if amp == 0 {
		return 0, 0
	}
	return amp, math.Log10(amp*1000) + 1.11
}

// analyse decodes and measures every message of a batch on workers
// goroutines, and returns when all of them are done.
func analyse(ctx context.Context, msgs []*consumer.Message, workers int) []pick {
	in := make(chan int)
	out := make(chan pick, len(msgs))
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range in {
				if ctx.Err() != nil {
					out <- pick{index: i, err: ctx.Err()}
					continue
				}
				var w waveform
				if err := json.Unmarshal(msgs[i].Body, &w); err != nil {
					out <- pick{index: i, err: consumer.Permanent(err)}
					continue
				}
				amp, ml := magnitudeOf(w)
				out <- pick{index: i, station: w.Station, eventID: w.EventID, amplitude: amp, magnitude: ml}
			}
		}()
	}
	for i := range msgs {
		in <- i
	}
	close(in)
	wg.Wait()
	close(out)
	picks := make([]pick, len(msgs))
	for p := range out {
		picks[p.index] = p
	}
	return picks
}
