package console

import (
	"bytes"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
)

// BenchmarkTextFilter1000x1MB filters 1,000 dead letters of 1 MB each by a
// text none of them holds (the worst case: every field searched to its
// limit), as a filtered page does after listing them, clock checks
// against DefaultFilterBudget included. Issue 38's measure: under 1 s on
// this machine, well within the budget. Reports ms/filter; run with
// go test -run X -bench TextFilter -benchtime 3x ./internal/console/.
func BenchmarkTextFilter1000x1MB(b *testing.B) {
	dls := make([]adapters.DeadLetter, 1000)
	for i := range dls {
		dls[i] = adapters.DeadLetter{Copies: 1, Message: &consumer.Message{ID: fmt.Sprintf("order-%d", i), Key: "k",
			Body: bytes.Repeat([]byte("payload "), 1<<17), Headers: map[string]string{consumer.HeaderError: "boom"}}}
	}
	f, err := ParseFilter(url.Values{"text": {"needle-nowhere"}})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		deadline := time.Now().Add(DefaultFilterBudget)
		sel, scanned := f.selectUntil(dls, func() bool { return !time.Now().Before(deadline) })
		if len(sel) != 0 || scanned != len(dls) {
			b.Fatalf("selected %d, scanned %d of %d", len(sel), scanned, len(dls))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/filter")
}
