package consumer

import (
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// checkID reports why id cannot be a message ID, with the dead-letter reason:
// ReasonMissingID when empty; ReasonInvalidID when longer than max bytes, not
// valid UTF-8, or holding a control character (NUL included). Stores key
// claims by the ID and a database rejects such text, so the runtime checks
// at the door, before any attempt, on every broker.
func checkID(id string, max int) (reason string, err error) {
	switch {
	case id == "":
		return ReasonMissingID, errors.New("message has no ID")
	case len(id) > max:
		return ReasonInvalidID, fmt.Errorf("message ID is %d bytes, over the %d-byte limit", len(id), max)
	}
	for i := 0; i < len(id); i++ {
		if b := id[i]; b < 0x20 || b >= 0x7f {
			return checkIDUnicode(id)
		}
	}
	return "", nil // printable ASCII, the common case
}

func checkIDUnicode(id string) (string, error) {
	if !utf8.ValidString(id) {
		return ReasonInvalidID, fmt.Errorf("message ID %q is not valid UTF-8", id)
	}
	for i, r := range id {
		if unicode.IsControl(r) {
			return ReasonInvalidID, fmt.Errorf("message ID %q holds control character %U at byte %d", id, r, i)
		}
	}
	return "", nil
}
