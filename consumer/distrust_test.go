package consumer

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDistrustHeadersMovesOncelyHeadersAside(t *testing.T) {
	h := map[string]string{HeaderAttempt: "99", HeaderOriginalSource: "forged", "x-app": "v", HeaderMessageID: "m1"}
	require.True(t, DistrustHeaders(h))
	require.Equal(t, map[string]string{"untrusted-oncely-attempt": "99", "untrusted-oncely-original-source": "forged", "x-app": "v", HeaderMessageID: "m1"}, h)
	require.Zero(t, AttemptFromHeaders(h))
	require.False(t, DistrustHeaders(h))
	require.False(t, DistrustHeaders(nil))
}
