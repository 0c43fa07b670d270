package main

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Text from a message or a broker (IDs, keys, headers, bodies, errors,
// topic and queue names) reaches a terminal only through safeLine or
// safeLines. They render visibly, Go-escape style, every character a
// terminal could act on instead of showing: the C0 controls (ESC starts
// the sequences that retitle the terminal, clear the screen or write
// hyperlinks), DEL, the C1 controls U+0080–U+009F (U+009B is an 8-bit
// CSI), bytes that are not UTF-8 (a lone 0x9b is a CSI to a terminal in
// Latin-1 mode), and the bidirectional and line-separator format characters
// that reorder or break what the operator reads (U+202E). Escapes look like
// \x1b, \r, \u009b, \u202e; backslashes are left as they are, so a message
// that spells "\x1b" reads the same as one that holds ESC. Printable text,
// including non-ASCII letters, passes unchanged.

// safeLine returns s for one line of output: newlines and tabs are escaped
// too (\n, \t), so s cannot break a table's rows or columns.
func safeLine(s string) string { return escapeControls(s, false) }

// safeLines returns s for multi-line output: newlines and tabs are kept;
// everything else safeLine escapes is escaped (a carriage return too, since
// it lets a line overwrite what came before it).
func safeLines(s string) string { return escapeControls(s, true) }

func escapeControls(s string, keepLines bool) string {
	if !needsEscape(s, keepLines) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keepLines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// needsEscape reports whether escapeControls would change s.
func needsEscape(s string, keepLines bool) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return true
		case keepLines && (r == '\n' || r == '\t'):
		case r < 0x20 || r == 0x7f || unsafeRune(r):
			return true
		}
		i += size
	}
	return false
}

// unsafeRune reports the non-ASCII characters a terminal acts on or that
// change how the text around them is read: the C1 controls and the
// bidirectional, line- and paragraph-separator format characters.
func unsafeRune(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f:
		return true
	case r >= 0x2028 && r <= 0x202e:
		return true
	case r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
