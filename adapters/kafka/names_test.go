package kafka

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/internal/namestest"
	"github.com/oncely/oncely/retry"
)

// TestTopicNamesInjective: 200,000 random (topic, group) pairs drawn from
// '.', '_', '-', ':' and letters, up to Kafka's 249 characters, and the
// reported pairs ("a.b", "c") and ("a", "b.c"): no two pairs that Kafka
// lets coexist share a retry or dead-letter topic, with '.' and '_' taken
// as one character as Kafka takes them. Catches a plain join
// "<topic>.<group>.dlq".
func TestTopicNamesInjective(t *testing.T) {
	fold := func(s string) string { return strings.ReplaceAll(s, "_", ".") }
	n := namestest.Check(t, namestest.Config{
		Fixed:    []namestest.Pair{{Source: "a.b", Consumer: "c"}, {Source: "a", Consumer: "b.c"}, {Source: "a_b", Consumer: "c"}, {Source: "a", Consumer: "b_c"}},
		Source:   func(r *rand.Rand) string { return namestest.Name(r, "ab.-_", maxTopicName) },
		Consumer: func(r *rand.Rand) string { return namestest.Name(r, "ab.-_:", maxTopicName) },
		Names: func(p namestest.Pair) ([]string, bool) {
			refused := strings.Contains(p.Source, ".retry.") || strings.HasSuffix(p.Source, ".dlq") || p.Source == "." || p.Source == ".."
			if refused || len(checkTopicNames(p.Source, p.Consumer, retry.DefaultTiers, true)) > 0 {
				return nil, false
			}
			out := []string{fold(DeadLetterTopic(p.Source, p.Consumer))}
			for _, d := range retry.DefaultTiers {
				out = append(out, fold(RetryTopic(p.Source, p.Consumer, d)))
			}
			return out, true
		},
		Coexist: func(a, b namestest.Pair) bool { return a.Source == b.Source || fold(a.Source) != fold(b.Source) },
	})
	require.Greater(t, n, 100_000)
}

// TestTopicNames: groups of letters, digits and '-' keep the names of
// earlier versions; other groups are escaped and marked with an empty part;
// names Kafka would refuse are refused at start.
func TestTopicNames(t *testing.T) {
	require.Equal(t, "payments.ledger-v2.dlq", DeadLetterTopic("payments", "ledger-v2"))
	require.Equal(t, "payments.v1.ledger.retry.10s", RetryTopic("payments.v1", "ledger", retry.DefaultTiers[1]))
	require.Equal(t, "a.b-2ec..dlq", DeadLetterTopic("a", "b.c"))
	require.Equal(t, "a.b-5fc..retry.1s", RetryTopic("a", "b_c", retry.DefaultTiers[0]))

	long := Config{Brokers: []string{"b"}, Topic: strings.Repeat("t", 240), Group: "ledger"}.withDefaults()
	require.ErrorContains(t, long.validate(), "over Kafka's 249")
	bad := Config{Brokers: []string{"b"}, Topic: "pay ments", Group: "ledger"}.withDefaults()
	require.ErrorContains(t, bad.validate(), "characters Kafka refuses")
}

// TestDeadLetterTopicGroupReadsBack: DeadLetterTopicGroup returns the group
// of every dead-letter topic DeadLetterTopic names, escaped or not, and
// refuses another pair's topic. Catches a lookup that parses the plain join
// only (an escaped group's consumers would go unlisted).
func TestDeadLetterTopicGroupReadsBack(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		topic, group := namestest.Name(r, "ab.-_", 40), namestest.Name(r, "ab.-_:", 40)
		if topic == "" || group == "" {
			continue
		}
		got, ok := DeadLetterTopicGroup(topic, DeadLetterTopic(topic, group))
		require.True(t, ok, "topic %q group %q", topic, group)
		require.Equal(t, group, got)
		_, ok = DeadLetterTopicGroup(topic+"x", DeadLetterTopic(topic, group))
		require.False(t, ok, "another topic's dead-letter topic read back")
	}
}
