package risk

import (
	"math"
	"sync"
)

// signal is one input to the score, computed from the application alone.
type signal struct {
	name   string
	weight float64
	value  float64
}

type scoreJob struct {
	app    application
	result chan<- []signal
}

// scorers is a fixed pool of goroutines computing signals; they never touch
// the database.
type scorers struct {
	jobs chan scoreJob
	once sync.Once
}

func newScorers(n int) *scorers {
	s := &scorers{jobs: make(chan scoreJob)}
	for i := 0; i < n; i++ {
		go func() {
			for j := range s.jobs {
				j.result <- computeSignals(j.app)
			}
		}()
	}
	return s
}

func (s *scorers) stop() { s.once.Do(func() { close(s.jobs) }) }

func computeSignals(a application) []signal {
	income := math.Max(float64(a.IncomeCents), 1)
	return []signal{
		{"debt_ratio", 0.5, float64(a.DebtCents) / income},
		{"tenure", 0.3, 1 / (1 + float64(a.MonthsEmployed))},
		{"amount", 0.2, float64(a.AmountCents) / income},
	}
}
