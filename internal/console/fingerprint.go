package console

import (
	"encoding/hex"
	"hash/fnv"
	"strings"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
)

// Fingerprint is what dead letters failing the same way share: reason,
// error type, error text with its variable parts replaced (Normalize) and
// the first stack frame of a panic.
type Fingerprint struct {
	Reason    string
	ErrorType string
	Pattern   string
	Frame     string
}

// FingerprintOf returns d's fingerprint.
func FingerprintOf(d adapters.DeadLetter) Fingerprint {
	return Fingerprint{
		Reason:    d.Reason(),
		ErrorType: d.Message.Header(consumer.HeaderErrorType),
		Pattern:   Normalize(d.Error()),
		Frame:     FirstFrame(d.Message.Header(consumer.HeaderStack)),
	}
}

// ID is a short stable name of f for URLs: 16 hex digits of a 64-bit
// FNV-1a hash of its four parts.
func (f Fingerprint) ID() string {
	h := fnv.New64a()
	for _, s := range []string{f.Reason, f.ErrorType, f.Pattern, f.Frame} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Placeholders Normalize writes.
const (
	phNumber = "<n>"
	phUUID   = "<uuid>"
	phHex    = "<hex>"
	phQuoted = "<q>"
)

// maxQuoted is the longest quoted value Normalize replaces; a quote with no
// closing quote within it is kept as text.
const maxQuoted = 256

// Normalize replaces the variable parts of an error text with
// placeholders, in one pass over its bytes: quoted values ('x', "x", `x`)
// with <q> (inside the kept quotes), UUIDs with <uuid>, 0x-prefixed hex and
// hex runs of 8 or more characters holding a digit with <hex>, and every
// other run of digits with <n>. So "order 42 of 'bob' failed: id
// 1b4e28ba-2fa1-11d2-883f-0016d3cca427" and "order 7 of 'amy' failed: id
// 6fa459ea-ee8a-3ca4-894e-db77e160355e" share "order <n> of '<q>' failed:
// id <uuid>". It is hand-written rather than regular expressions because
// that pays: 25 times faster in BenchmarkGroup100k (docs/benchmarks.md),
// 100,000 dead letters grouped in about 100 ms.
func Normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			if j := strings.IndexByte(s[i+1:min(len(s), i+1+maxQuoted)], c); j >= 0 && !(c == '\'' && i > 0 && isAlnum(s[i-1])) {
				b.WriteByte(c)
				b.WriteString(phQuoted)
				b.WriteByte(c)
				i += j + 2
				continue
			}
			b.WriteByte(c)
			i++
		case isAlnum(c):
			j := i
			for j < len(s) && isAlnum(s[j]) {
				j++
			}
			if isUUID(s, i) {
				b.WriteString(phUUID)
				i += 36
				continue
			}
			writeWord(&b, s[i:j])
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// writeWord writes a run of letters and digits, hex as <hex> and digit
// runs as <n>.
func writeWord(b *strings.Builder, w string) {
	if len(w) > 2 && w[0] == '0' && (w[1] == 'x' || w[1] == 'X') && allHex(w[2:]) {
		b.WriteString(phHex)
		return
	}
	if len(w) >= 8 && allHex(w) && hasDigit(w) {
		b.WriteString(phHex)
		return
	}
	for i := 0; i < len(w); {
		if isDigit(w[i]) {
			for i < len(w) && isDigit(w[i]) {
				i++
			}
			b.WriteString(phNumber)
			continue
		}
		b.WriteByte(w[i])
		i++
	}
}

// isUUID reports whether s[i:] starts with 8-4-4-4-12 hex digits not
// followed by another letter or digit.
func isUUID(s string, i int) bool {
	if len(s)-i < 36 || (len(s)-i > 36 && isAlnum(s[i+36])) {
		return false
	}
	for k := range 36 {
		c := s[i+k]
		if k == 8 || k == 13 || k == 18 || k == 23 {
			if c != '-' {
				return false
			}
		} else if !isHex(c) {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isHex(c byte) bool   { return isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F') }
func isAlnum(c byte) bool {
	return isDigit(c) || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || c == '_'
}

func allHex(w string) bool {
	for i := 0; i < len(w); i++ {
		if !isHex(w[i]) {
			return false
		}
	}
	return len(w) > 0
}

func hasDigit(w string) bool {
	for i := 0; i < len(w); i++ {
		if isDigit(w[i]) {
			return true
		}
	}
	return false
}

// FirstFrame returns the function of the first frame of a Go stack trace
// (runtime/debug.Stack's format) that is the panicking code: the first
// after the last panic( line, or else the first outside package runtime.
// Arguments are dropped, so the frame is the same for every value; "" when
// stack is not a Go stack trace (it starts with "goroutine ") or has no
// frame.
func FirstFrame(stack string) string {
	if !strings.HasPrefix(stack, "goroutine ") {
		return ""
	}
	lines := strings.Split(stack, "\n")
	start := 0
	for i, l := range lines {
		if strings.HasPrefix(l, "panic(") {
			start = i + 1
		}
	}
	for _, l := range lines[start:] {
		if l == "" || l[0] == '\t' || l[0] == ' ' || strings.HasPrefix(l, "goroutine ") ||
			strings.HasPrefix(l, "runtime.") || strings.HasPrefix(l, "runtime/debug.") || strings.HasPrefix(l, "panic(") {
			continue
		}
		if k := strings.LastIndexByte(l, '('); k > 0 && strings.HasSuffix(l, ")") {
			l = l[:k]
		}
		return l
	}
	return ""
}
