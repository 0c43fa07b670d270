package console

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
)

// fixedLetters is a broker whose dead letters are dls, whatever the
// source and consumer: their failure times are the test's.
type fixedLetters struct {
	adapters.Broker
	dls []adapters.DeadLetter
}

func (b fixedLetters) DeadLetters(context.Context, string, string, int) ([]adapters.DeadLetter, error) {
	return b.dls, nil
}

func TestAgo(t *testing.T) {
	now := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	for d, want := range map[time.Duration]string{
		-time.Minute:                   "just now",
		59 * time.Second:               "just now",
		5*time.Minute + 59*time.Second: "5 min ago",
		59 * time.Minute:               "59 min ago",
		3*time.Hour + 59*time.Minute:   "3 h ago",
		23 * time.Hour:                 "23 h ago",
		30 * time.Hour:                 "1 day ago",
		50 * time.Hour:                 "2 days ago",
		400 * 24 * time.Hour:           "400 days ago",
	} {
		require.Equal(t, want, ago(now, now.Add(-d)), "age %v", d)
	}
	require.Equal(t, "-", ago(now, time.Time{}))
}

// At 3 a.m. the pages give ages from the clock (exact UTC time in the
// title), each group's trend (last hour, last day), and the message page
// gives reason, attempts, age and the reason's next step before the body,
// and the body before the headers and the stack. The bugs it catches: an
// age or trend computed from the first failure instead of the last, or
// from the wall clock instead of Config.Now; the body below the headers.
func TestAtThreeAM(t *testing.T) {
	now := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	first := now.Add(-72 * time.Hour) // the first failure of every letter
	letter := func(id, reason, errText string, failed time.Time) adapters.DeadLetter {
		d := dead(id, reason, "*ledger.DecodeError", errText, "", failed)
		d.Message.Headers[consumer.HeaderFirstFailedAt] = first.Format(time.RFC3339Nano)
		d.Message.Headers[consumer.HeaderAttempt] = "3"
		d.Message.Body = []byte(`{"order":1}`)
		return d
	}
	dls := []adapters.DeadLetter{
		letter("a", consumer.ReasonExhausted, "order 1 not found", now.Add(-5*time.Minute)),
		letter("b", consumer.ReasonExhausted, "order 2 not found", now.Add(-50*time.Minute)),
		letter("c", consumer.ReasonExhausted, "order 3 not found", now.Add(-3*time.Hour)),
		letter("d", consumer.ReasonExhausted, "order 4 not found", now.Add(-49*time.Hour)),
		letter("e", consumer.ReasonPermanent, "card 'x' declined", now.Add(-25*time.Hour)),
	}
	f := newFixture(t, fixedLetters{Broker: memBroker(t), dls: dls}, func(c *Config) {
		c.Now = func() time.Time { return now }
	})
	path := consumerURL("payments", "ledger")

	body := f.page(path)
	require.Equal(t, []string{"4", "1"}, testids(body, "group-count"))
	require.Equal(t, []string{"2", "0"}, testids(body, "group-last-hour"))
	require.Equal(t, []string{"3", "0"}, testids(body, "group-last-day"))
	require.Equal(t, []string{"2 days ago", "1 day ago"}, testids(body, "group-first-seen"))
	require.Equal(t, []string{"5 min ago", "1 day ago"}, testids(body, "group-last-seen"))
	require.Contains(t, body, `title="2026-12-07 02:55:00Z" data-testid="group-last-seen"`)

	body = f.page(path + "messages?reason=exhausted")
	require.Equal(t, []string{"5 min ago", "50 min ago", "3 h ago", "2 days ago"}, testids(body, "message-failed-at"))

	body = f.page(path + "message?id=b")
	require.Equal(t, []string{"50 min ago"}, testids(body, "failure-age"))
	require.Contains(t, body, `title="2026-12-07 02:10:00Z" data-testid="failure-age"`)
	require.Equal(t, []string{"3"}, testids(body, "failure-attempts"))
	require.Equal(t, []string{"Next step: " + nextStep(consumer.ReasonExhausted)}, testids(body, "next-step"))
	order := []string{`data-testid="failure-reason"`, `data-testid="failure-attempts"`, `data-testid="failure-age"`,
		`data-testid="next-step"`, `data-testid="body"`, `data-testid="failure-stack"`, `data-testid="headers-table"`}
	d := dls[1]
	d.Message.Headers[consumer.HeaderStack] = "goroutine 1 [running]:\nmain.f()\n\t/m.go:3\n"
	body = f.page(path + "message?id=b")
	at := -1
	for _, id := range order {
		i := strings.Index(body, id)
		require.Greater(t, i, at, "%s is not after %s", id, order[max(0, slices.Index(order, id)-1)])
		at = i
	}
}

// Every reason the runtime and the adapters record has its own next step.
func TestNextStepPerReason(t *testing.T) {
	seen := map[string]string{}
	for _, r := range reasons {
		s := nextStep(r)
		require.NotEqual(t, nextStep("no such reason"), s, "reason %s has no next step", r)
		require.NotContains(t, s, "\n")
		require.Empty(t, seen[s], "reasons %s and %s share a next step", seen[s], r)
		seen[s] = r
	}
}
