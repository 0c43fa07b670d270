package console

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Per-user tokens, given by their SHA-256, log in as their own names, and
// the audit table records the name of the token that acted. The bug it
// catches: one name for every token holder.
func TestPerUserTokenHashes(t *testing.T) {
	br := memBroker(t)
	source, name := names()
	seed(t, br, source, name, []letter{{id: "m1", err: "e"}, {id: "m2", err: "e"}}, 2)
	const ann, ben = "Ann-token-7Qx2Lr9Vz4Kp1Wm8", "Ben-token-3Hs6Jd0Nc5Bt2Gy9"
	f := newFixture(t, br, func(c *Config) {
		c.TokenHashes = map[string]string{sha256Hex(ann): "ann", sha256Hex(ben): "ben"}
	})
	base := consumerURL(source, name)
	code, _ := f.get(base)
	require.Equal(t, http.StatusSeeOther, code, "a login is required")
	require.Equal(t, http.StatusUnauthorized, f.post("/login", url.Values{"token": {sha256Hex(ann)}}).StatusCode, "the hash is not a token")

	for _, u := range []struct{ token, name, id string }{{ann, "ann", "m1"}, {ben, "ben", "m2"}} {
		jar, err := cookiejar.New(nil)
		require.NoError(t, err)
		f.client.Jar = jar
		require.Equal(t, http.StatusSeeOther, f.post("/login", url.Values{"token": {u.token}}).StatusCode)
		_, user, ok := f.sessionOf()
		require.True(t, ok)
		require.Equal(t, u.name, user)
		require.Equal(t, http.StatusOK, f.post(base+"delete", url.Values{"id": {u.id}, "limit": {"1"}, "confirm": {ConfirmWord}}).StatusCode)
	}
	rows, err := f.srv.audit.latest(t.Context(), 10)
	require.NoError(t, err)
	require.Len(t, rows, 2)
	require.Equal(t, []string{"ben", "ann"}, []string{rows[0].Actor, rows[1].Actor})
	require.Equal(t, []string{"id=m2", "id=m1"}, []string{rows[0].Selection, rows[1].Selection})

	_, err = New(Config{TokenHashes: map[string]string{"abc": "x", sha256Hex("y"): " ", "AB" + sha256Hex("z")[2:]: "z"}})
	require.ErrorContains(t, err, `the token hash of "x" in TokenHashes: want 64 lower-case hex digits`)
	require.ErrorContains(t, err, `the token hash of "z" in TokenHashes`)
	require.ErrorContains(t, err, "a hash in TokenHashes has an empty name")
}
