package console

import (
	"bytes"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// TextSearchLimit is how many bytes at the start of each field the text
// filter searches: a needle past it is not found. It bounds a filtered
// page's work at 64 KiB a field, whatever the size of the bodies.
const TextSearchLimit = 64 << 10

// textSearch finds a text in the first TextSearchLimit bytes of a field,
// ignoring case: an ASCII text by folding ASCII letters and a plain byte
// search (about 1 ns a byte), any other through a (?i) regexp.
type textSearch struct {
	ascii []byte // the text in lower case, when it is ASCII
	re    *regexp.Regexp
}

func newTextSearch(text string) textSearch {
	for i := 0; i < len(text); i++ {
		if text[i] >= utf8.RuneSelf {
			return textSearch{re: regexp.MustCompile("(?i)" + regexp.QuoteMeta(text))}
		}
	}
	return textSearch{ascii: []byte(strings.ToLower(text))}
}

// set reports whether there is a text to find.
func (t textSearch) set() bool { return len(t.ascii) > 0 || t.re != nil }

// foldBuffers hold a field folded to lower case while it is searched.
var foldBuffers = sync.Pool{New: func() any { b := make([]byte, 0, TextSearchLimit); return &b }}

// inString and inBytes report whether a field's first TextSearchLimit
// bytes hold the text.
func (t textSearch) inString(f string) bool { return searchIn(t, f[:min(len(f), TextSearchLimit)]) }
func (t textSearch) inBytes(f []byte) bool  { return searchIn(t, f[:min(len(f), TextSearchLimit)]) }

func searchIn[T string | []byte](t textSearch, field T) bool {
	if t.re != nil {
		return t.re.MatchString(string(field)) // a copy for []byte: non-ASCII texts are rare
	}
	if len(field) < len(t.ascii) {
		return false
	}
	bp := foldBuffers.Get().(*[]byte)
	defer foldBuffers.Put(bp)
	buf := *bp
	if cap(buf) < len(field) {
		buf = make([]byte, len(field))
	}
	buf = buf[:len(field)]
	for i := 0; i < len(field); i++ {
		c := field[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return bytes.Contains(buf, t.ascii)
}
