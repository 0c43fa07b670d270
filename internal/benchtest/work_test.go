package benchtest

import "testing"

func TestOrderJSONSize(t *testing.T) {
	for _, i := range []int{0, 999_999_999} {
		if n := len(OrderJSON(i)); n < 1000 || n > 1100 {
			t.Errorf("OrderJSON(%d) is %d bytes, want 1,000–1,100", i, n)
		}
	}
	var w Work
	if err := w.Handle(OrderJSON(7)); err != nil {
		t.Fatal(err)
	}
	if got, want := w.totals["customer-0007"], 1*12.5+2*13.5+3*14.5; got != want {
		t.Errorf("total %v, want %v", got, want)
	}
}

// BenchmarkWork is the realistic handler's own cost per message, one
// goroutine (the ns/op).
func BenchmarkWork(b *testing.B) {
	body := OrderJSON(1)
	var w Work
	for b.Loop() {
		if err := w.Handle(body); err != nil {
			b.Fatal(err)
		}
	}
}
