// Package names escapes a name so that it can stand as one part of a
// derived broker name (a retry or dead-letter destination) without its
// separator: with it each adapter names the destinations of a (source,
// consumer) pair injectively. See docs/brokers.md, "Names".
package names

import (
	"errors"
	"fmt"
	"strings"
)

const hexDigits = "0123456789abcdef"

// Escape returns s with every byte that keep rejects, and every esc byte,
// written as esc and two lowercase hex digits ("a.b" with esc '_' escaping
// '.': "a_2eb"). Every other byte stands for itself, so the result holds
// only bytes keep accepts and esc, and Unescape(Escape(s, esc, keep), esc)
// is s: Escape is injective for a given esc.
func Escape(s string, esc byte, keep func(byte) bool) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != esc && keep(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte(esc)
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&0xf])
	}
	return b.String()
}

// ErrMalformed is returned (wrapped) by Unescape for an escape that Escape
// cannot have written.
var ErrMalformed = errors.New("malformed escape")

// Unescape reverses Escape with the same esc. It refuses an esc not
// followed by two lowercase hex digits (ErrMalformed); it does not check
// that the escaped bytes were ones keep rejects.
func Unescape(s string, esc byte) (string, error) {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != esc {
			b.WriteByte(s[i])
			continue
		}
		hi, lo := -1, -1
		if i+2 < len(s) {
			hi, lo = strings.IndexByte(hexDigits, s[i+1]), strings.IndexByte(hexDigits, s[i+2])
		}
		if hi < 0 || lo < 0 {
			return "", fmt.Errorf("%w at byte %d of %q", ErrMalformed, i, s)
		}
		b.WriteByte(byte(hi<<4 | lo))
		i += 2
	}
	return b.String(), nil
}

// Alnum reports whether c is an ASCII letter or digit.
func Alnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
