package console

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode"
)

// Token strength: what CheckToken requires of a login token.
const (
	// MinTokenLength is the fewest characters a token may have.
	MinTokenLength = 22
	// MinTokenBits is the least estimated strength of a token, in bits.
	MinTokenBits = 128
	// MinTokenDistinct is the fewest different characters a token may hold.
	MinTokenDistinct = 8
)

// ErrWeakToken is returned (wrapped) by CheckToken for a token a guesser
// could find.
var ErrWeakToken = errors.New("the login token is too weak")

// CheckToken refuses a login token that is shorter than MinTokenLength,
// starts or ends with white space, holds fewer than MinTokenDistinct
// different characters (so no "aaaa…", "abab…" or all spaces), or whose
// estimated strength is below MinTokenBits. The estimate is the length
// times log2 of the alphabet its character classes span (lower case 26,
// upper case 26, digits 10, anything else 33): 22 characters of base64url
// reach 144 bits, 32 hex digits 165, 16 characters of any kind at most 105.
// It cannot see that a long token is a word list; NewToken makes a random
// one.
func CheckToken(token string) error {
	n := len([]rune(token))
	switch {
	case n < MinTokenLength:
		return fmt.Errorf("%w: it has %d characters, want at least %d", ErrWeakToken, n, MinTokenLength)
	case strings.TrimSpace(token) != token:
		return fmt.Errorf("%w: it starts or ends with white space", ErrWeakToken)
	}
	distinct := map[rune]bool{}
	var lower, upper, digit, other bool
	for _, r := range token {
		distinct[r] = true
		switch {
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= 'A' && r <= 'Z':
			upper = true
		case r >= '0' && r <= '9':
			digit = true
		case unicode.IsControl(r):
			return fmt.Errorf("%w: it holds a control character", ErrWeakToken)
		default:
			other = true
		}
	}
	if len(distinct) < MinTokenDistinct {
		return fmt.Errorf("%w: it has %d different characters, want at least %d", ErrWeakToken, len(distinct), MinTokenDistinct)
	}
	alphabet := 0
	for _, c := range []struct {
		used bool
		size int
	}{{lower, 26}, {upper, 26}, {digit, 10}, {other, 33}} {
		if c.used {
			alphabet += c.size
		}
	}
	if bits := float64(n) * math.Log2(float64(alphabet)); bits < MinTokenBits {
		return fmt.Errorf("%w: about %.0f bits, want %d (use more characters, or mix upper and lower case, digits and symbols)",
			ErrWeakToken, bits, MinTokenBits)
	}
	return nil
}

// NewToken returns a random login token: 32 bytes from crypto/rand in
// base64url, 43 characters, 256 bits. CheckToken accepts it.
func NewToken() string { return base64.RawURLEncoding.EncodeToString(randomBytes(32)) }
