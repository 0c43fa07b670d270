package console

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// New reports every problem of a Config at once.
func TestConfigValidation(t *testing.T) {
	_, err := New(Config{Schema: "Bad-Name", Tokens: map[string]string{"short": "bob", "long-enough-token-1234567": " "},
		DefaultRate: 5000, Consumers: []Consumer{{Source: "s"}}, ScanLimit: -1})
	require.Error(t, err)
	for _, want := range []string{"no Broker", "no Pool", "invalid Schema", `the token of "bob" in Tokens: the login token is too weak: it has 5 characters`,
		"a token in Tokens has an empty name", "DefaultRate 5000 and MaxRate 1000", "ScanLimit -1", `incomplete Consumers entry "s"/""`} {
		require.ErrorContains(t, err, want)
	}
}

// Weak tokens are refused, whatever their length; random ones pass. The
// bug it catches: a length-only check that takes 16 spaces.
func TestCheckToken(t *testing.T) {
	for _, weak := range []string{"", "short", "0123456789abcdef", "                ", strings.Repeat(" ", 40),
		strings.Repeat("a", 40), strings.Repeat("ab", 20), strings.Repeat("abc123", 6), "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab",
		" Zq3-kP9_xW2mR7vT4yB8nL1c", "Zq3-kP9_xW2mR7vT4yB8nL1c\n", "Zq3-kP9_xW2m\x00R7vT4yB8nL1c", "abcdefghijklmnopqrstuv"} {
		require.ErrorIs(t, CheckToken(weak), ErrWeakToken, "%q", weak)
	}
	for _, strong := range []string{"Zq3-kP9_xW2mR7vT4yB8nL1c", "s3cret-token-of-bob-0123", "9f86d081884c7d659a2feaa0c55ad015",
		"correct horse battery staple 42", NewToken()} {
		require.NoError(t, CheckToken(strong), "%q", strong)
	}
	_, err := New(Config{Tokens: map[string]string{strings.Repeat(" ", 16): "bob"}})
	require.ErrorIs(t, err, ErrWeakToken)
}
