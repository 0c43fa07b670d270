package names

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// TestEscapeRoundTrip: Unescape undoes Escape for random strings rich in
// the escape byte and in bytes keep rejects, the result holds only kept
// bytes and esc, and a malformed escape is refused.
func TestEscapeRoundTrip(t *testing.T) {
	keep := func(c byte) bool { return c != '.' }
	if got := Escape("a.b_c", '_', keep); got != "a_2eb_5fc" {
		t.Fatalf("Escape: got %q", got)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10_000 {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = "._-a\x00\xff"[r.IntN(6)]
		}
		s := string(b)
		e := Escape(s, '_', keep)
		for i := 0; i < len(e); i++ {
			if e[i] == '.' {
				t.Fatalf("Escape(%q) = %q keeps a rejected byte", s, e)
			}
		}
		if u, err := Unescape(e, '_'); err != nil || u != s {
			t.Fatalf("Unescape(Escape(%q)) = %q, %v", s, u, err)
		}
	}
	for _, bad := range []string{"a_", "a_2", "a_zz", "_2E"} {
		if _, err := Unescape(bad, '_'); !errors.Is(err, ErrMalformed) {
			t.Errorf("Unescape(%q): %v, want ErrMalformed", bad, err)
		}
	}
}
