package console

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"unicode/utf8"
)

// Body display limits.
const (
	maxTextShown   = 64 << 10 // bytes of text or JSON shown
	maxBinaryShown = 4 << 10  // bytes of a binary body hex-dumped
	maxIndented    = 1 << 20  // larger JSON is shown as text, not re-indented
	maxHeaderShown = 4 << 10  // bytes of a header value shown
)

// bodyView is a message body as a page shows it. Shown is plain text that
// the templates escape like every other value.
type bodyView struct {
	// Kind is "json" (pretty-printed), "text", "binary" (a hex dump) or
	// "empty".
	Kind string
	// Size is the body's length in bytes; ShownBytes how many of them
	// Shown covers (less when Truncated).
	Size, ShownBytes int
	Truncated        bool
	Shown            string
}

// viewBody renders b safely for a page: JSON pretty-printed, other UTF-8
// text as it is, anything else (invalid UTF-8, control characters) as a
// hex dump; long bodies are cut, saying so.
func viewBody(b []byte) bodyView {
	v := bodyView{Size: len(b)}
	switch {
	case len(b) == 0:
		v.Kind = "empty"
		return v
	case len(b) <= maxIndented && json.Valid(b):
		var buf bytes.Buffer
		if err := json.Indent(&buf, b, "", "  "); err == nil {
			v.Kind = "json"
			v.Shown, v.ShownBytes, v.Truncated = cutText(buf.String(), maxTextShown)
			if v.Truncated {
				v.ShownBytes = min(v.ShownBytes, len(b))
			} else {
				v.ShownBytes = len(b)
			}
			return v
		}
	}
	if isText(b) {
		v.Kind = "text"
		v.Shown, v.ShownBytes, v.Truncated = cutText(string(b), maxTextShown)
		return v
	}
	v.Kind = "binary"
	n := min(len(b), maxBinaryShown)
	v.Shown, v.ShownBytes, v.Truncated = hex.Dump(b[:n]), n, n < len(b)
	return v
}

// isText reports whether b is valid UTF-8 without control characters
// other than tab, newline and carriage return.
func isText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, c := range b {
		if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f {
			return false
		}
	}
	return true
}

// cutText returns s cut to at most n bytes on a rune boundary, the bytes
// kept and whether it was cut.
func cutText(s string, n int) (string, int, bool) {
	if len(s) <= n {
		return s, len(s), false
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], n, true
}

// headerView is one header as a page shows it.
type headerView struct {
	Name, Value string
	Size        int
	Truncated   bool
}

func viewHeader(name, value string) headerView {
	v, _, cut := cutText(value, maxHeaderShown)
	if !utf8.ValidString(v) {
		v = string([]rune(v)) // invalid bytes become U+FFFD
	}
	return headerView{Name: name, Value: v, Size: len(value), Truncated: cut}
}
