package redriveplan

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
)

type letters []adapters.DeadLetter

func (l letters) DeadLetters(context.Context, string, string, int) ([]adapters.DeadLetter, error) {
	return l, nil
}

type claims map[string]map[string]bool

func (c claims) Claimed(_ context.Context, name string, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, id := range ids {
		if c[name][id] {
			out[id] = true
		}
	}
	return out, nil
}

func dl(id, reason string) adapters.DeadLetter {
	return adapters.DeadLetter{Copies: 1, Message: &consumer.Message{ID: id, Headers: map[string]string{consumer.HeaderDeadLetterReason: reason}}}
}

// A plan selects with every option (reason, Match, Limit) and splits by
// the consumer's own claims. The bugs it catches: ignoring Match (the
// console's filters) or reading another consumer's claims.
func TestMake(t *testing.T) {
	l := letters{dl("a", "exhausted"), dl("b", "permanent"), dl("c", "exhausted"), dl("d", "exhausted"), dl("e", "exhausted")}
	c := claims{"ledger": {"a": true, "d": true}, "other": {"c": true}}
	p, err := Make(t.Context(), l, c, "pay", "ledger", adapters.RedriveOptions{Reason: "exhausted",
		Match: func(d adapters.DeadLetter) bool { return d.Message.ID != "e" }})
	require.NoError(t, err)
	require.Equal(t, 5, p.Seen)
	require.Equal(t, 3, p.Selected)
	require.Equal(t, []string{"a", "c", "d"}, p.IDs)
	require.Equal(t, []string{"a", "d"}, p.Applied)
	require.Equal(t, []string{"c"}, p.NotApplied)
	require.True(t, p.IsApplied("a"))
	require.False(t, p.IsApplied("c"))
	p, err = Make(t.Context(), l, c, "pay", "ledger", adapters.RedriveOptions{Limit: 2})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, p.IDs)
	require.Equal(t, []string{"b"}, p.NotApplied)
}
