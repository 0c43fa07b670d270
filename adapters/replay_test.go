package adapters

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseReplayTarget(t *testing.T) {
	got, err := ParseReplayTarget("earliest")
	require.NoError(t, err)
	require.Equal(t, ReplayTarget{}, got)
	got, err = ParseReplayTarget("2026-12-07T03:00:00Z")
	require.NoError(t, err)
	require.True(t, got.Time.Equal(time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)))
	got, err = ParseReplayTarget("0:12, 3:7")
	require.NoError(t, err)
	require.Equal(t, map[int32]int64{0: 12, 3: 7}, got.Offsets)
	require.Equal(t, "0:12,3:7", got.String())
	got, err = ParseReplayTarget("0:1733550000000-5")
	require.NoError(t, err)
	require.Equal(t, ReplayTarget{EntryIDs: map[int32]string{0: "1733550000000-5"}}, got)
	require.Equal(t, "0:1733550000000-5", got.String())
	for _, bad := range []string{"", "latest", "0:-1", "a:1", "0:1,0:2", "2026-12-07", "0:1-", "0:-5", "0:1-2-3", "0:1-2,0:3"} {
		_, err := ParseReplayTarget(bad)
		require.Error(t, err, bad)
	}
}
