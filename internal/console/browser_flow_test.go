package console_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/internal/browsertest"
	"github.com/oncely/oncely/internal/envtest"
	"github.com/oncely/oncely/internal/kafkatest"
)

// flowRate is the redrive rate the flow asks for, in messages per second.
const flowRate = 2

// flowLetters are nine dead letters in three fingerprint groups of 5, 3
// and 1: orders not found (order-1 and order-2 have claims: their effect
// committed before they were dead-lettered), cards declined, and one
// panic. The groups are interleaved in the destination, so a redrive that
// took the first five instead of the group's would move cards too.
func flowLetters() []letter {
	order := orderLetter
	card := func(i int) letter {
		return letter{id: fmt.Sprintf("card-%d", i), key: "acct-9", body: fmt.Appendf(nil, "charge card visa-%d", i),
			err: fmt.Sprintf("card 'visa-%d' declined", i)}
	}
	fx := letter{id: "fx-1", key: "acct-3", body: []byte(`{"pair":"EURUSD"}`), err: "rates feed: unexpected EOF", panics: true}
	return []letter{card(1), order(1), fx, order(2), card(2), order(3), order(4), card(3), order(5)}
}

// orderLetter is the i-th dead letter of the group of orders not found.
func orderLetter(i int) letter {
	return letter{id: fmt.Sprintf("order-%d", i), key: fmt.Sprintf("acct-%d", i%2),
		body:    fmt.Appendf(nil, `{"order":%d,"amount":"%d.50","currency":"EUR"}`, 100+i, 10*i),
		headers: map[string]string{"trace-id": fmt.Sprintf("4bf92f3577b34da6a3ce929d0e0e%04d", i)},
		err:     fmt.Sprintf("order %d not found", 100+i), claimed: i <= 2}
}

var (
	orderIDs = []string{"order-1", "order-2", "order-3", "order-4", "order-5"}
	otherIDs = []string{"card-1", "card-2", "card-3", "fx-1"}
)

// jobView is what the job page shows.
type jobView struct {
	Status   string `json:"status"`
	Redriven string `json:"redriven"`
	Limit    string `json:"limit"`
}

const jobViewJS = `(() => {
  const q = id => { const e = document.querySelector('[data-testid="' + id + '"]'); return e ? e.textContent.trim() : ""; };
  return {status: q("job-status"), redriven: q("job-redriven"), limit: q("job-limit")};
})()`

// runFlow walks the console as an operator does, on the broker at url:
// browse the overview (depth emphasised), open the consumer's groups (5/3/1), open the group
// of five and a message, plan a redrive of the group (5 selected, 2
// already applied), start it at 2/s and watch its live progress to "5 of
// 5", read the audit; then checks on the broker that exactly the five came
// back to the source, once each, and the other four stay dead-lettered.
// See flowOptions for the variations.
//
// Catches: group counts or membership wrong, a plan that ignores the
// claims, a redrive that ignores the group (moves the first five, cards
// among them), the rate (no progress shown between 0 and 5, done sooner
// than 4 intervals) or the plan's limit (lateLetter), a redrive that
// duplicates or loses messages, a progress page that never reaches the
// end, an audit row not written or with the wrong outcome or counts; and
// what an operator needs at a glance (browser_glance_test.go): ages and
// trends by Config.Now, the depth emphasised, the message page's summary
// and next step above its body, the body above its headers.
func runFlow(t *testing.T, url, source, name string, o flowOptions) {
	br := openBroker(t, url)
	r := newRig(t, br, source, name, flowLetters(), aheadClock)
	shot := func(name string) {
		if o.shots {
			r.tab.Shot(name)
		}
	}

	// Browse: the overview lists the consumer and its nine dead letters.
	r.open("/")
	row := fmt.Sprintf(`[data-testid="consumer-row"][data-source=%q][data-consumer=%q]`, source, name)
	require.Equal(t, "9", r.text(tid(row, "dlq-depth")))
	checkGlanceOverview(r, row, "9")
	shot("overview")

	// Group: three fingerprint groups, largest first.
	require.Equal(t, 200, r.click(tid(row, "consumer-link")))
	require.Equal(t, name, r.text(tid("consumer-name")))
	require.Equal(t, []string{"5", "3", "1"}, r.texts(tid("group-row", "group-count")))
	patterns := r.texts(tid("group-row", "group-pattern"))
	require.Equal(t, []string{"permanent: order <n> not found", "permanent: card '<q>' declined"}, patterns[:2])
	groups := r.attrs(tid("group-row"), "data-group")
	require.Len(t, groups, 3)
	group := groups[0]
	checkGlanceGroups(r, []string{"5", "3", "1"})
	shot("groups")

	// The group of five, and one of its messages.
	groupRow := fmt.Sprintf(`[data-testid="group-row"][data-group=%q]`, group)
	require.Equal(t, 200, r.click(tid(groupRow, "group-link")))
	require.Equal(t, []string{group}, r.attrs(tid("group-summary"), "data-group"))
	ids := r.attrs(tid("message-row"), "data-id")
	slices.Sort(ids)
	require.Equal(t, orderIDs, ids)
	shot("group")
	if !o.skipMessage {
		require.Equal(t, 200, r.click(tid(`[data-testid="message-row"][data-id="order-3"]`, "message-link")))
		require.Equal(t, "order-3", r.text(tid("message-id")))
		require.Equal(t, "permanent: order 103 not found", r.text(tid("failure-error")))
		require.Equal(t, "json", r.text(tid("body-kind")))
		require.Contains(t, r.text(tid("body")), `"order": 103`)
		checkGlanceMessage(r)
		shot("message")
		require.Equal(t, 200, r.click(tid("message-group-link")))
	}

	// Plan a redrive of the group: five selected, the two with claims
	// already applied.
	require.Equal(t, 200, r.click(tid("plan-group")))
	require.Equal(t, "5", r.text(tid("plan-selected")))
	require.Equal(t, "9", r.text(tid("plan-seen")))
	require.Equal(t, "2", r.text(tid("plan-applied-count")))
	require.Equal(t, "3", r.text(tid("plan-not-applied-count")))
	require.Equal(t, []string{"order-1", "order-2"}, sorted(r.attrs(tid("plan-applied-list", "plan-id"), "data-id")))
	require.Equal(t, []string{"order-3", "order-4", "order-5"}, sorted(r.attrs(tid("plan-not-applied-list", "plan-id"), "data-id")))
	shot("plan")
	left := otherIDs
	if o.lateLetter {
		// One more order fails after the plan was shown: the redrive
		// still takes the five planned, and order-6 stays.
		seed(t, br, source, name, []letter{orderLetter(6)}, len(flowLetters())+1)
		left = append(slices.Clone(otherIDs), "order-6")
	}

	// Redrive at 2/s; the job page shows its progress live, then the end.
	r.tab.Do(chromedp.SetValue(chromedp.CSS(tid("redrive-rate")), fmt.Sprint(flowRate)))
	started := time.Now()
	require.Equal(t, 200, r.click(tid("redrive-submit")))
	require.Equal(t, "5", r.text(tid("job-limit")))
	require.Equal(t, fmt.Sprint(flowRate), r.text(tid("job-rate")))
	var partial []string // redriven counts the page showed while running
	end := browsertest.Poll(r.tab, jobViewJS, func(v jobView) bool {
		if v.Status == "running" && v.Redriven != "0" && v.Redriven != "5" && !slices.Contains(partial, v.Redriven) {
			if partial = append(partial, v.Redriven); len(partial) == 1 {
				shot("redrive")
			}
		}
		return v.Status != "" && v.Status != "running"
	})
	elapsed := time.Since(started)
	require.Equal(t, jobView{Status: "done", Redriven: "5", Limit: "5"}, end, "the job page at the end")
	require.NotEmpty(t, partial, "the page never showed the redrive between 0 and 5 while it ran")
	// A redrive at 2/s sends its fifth message 4/2 s after its first: a
	// lower bound no correct run can beat (the limiter's schedule).
	require.GreaterOrEqual(t, elapsed, time.Duration(float64(len(orderIDs)-1)/flowRate*float64(time.Second)), "the redrive ignored its rate")
	require.Empty(t, r.texts(tid("job-cancel")), "a finished job has no cancel button")

	// The audit: the start and the end of the redrive, by alice.
	require.Equal(t, 200, r.click(tid("nav-audit")))
	require.ElementsMatch(t, []string{"redrive.start", "redrive.end"}, r.attrs(tid("audit-row"), "data-action"))
	require.Equal(t, []string{"alice", "alice"}, r.texts(tid("audit-row", "audit-actor")))
	for _, sel := range r.texts(tid("audit-row", "audit-selection")) {
		require.Contains(t, sel, group, "the audit names the selection")
	}
	endRow := tid(`[data-testid="audit-row"][data-action="redrive.end"]`)
	require.Equal(t, "done", r.text(tid(endRow, "audit-outcome")))
	require.Contains(t, strings.Fields(r.text(tid(endRow, "audit-counts"))), "redriven=5")
	shot("audit")

	// On the broker: exactly the five came back to the source, once each;
	// the other four are still dead letters.
	ctx, cancel := context.WithTimeout(t.Context(), rigTimeout)
	defer cancel()
	src, err := br.Source(ctx, source, name)
	require.NoError(t, err)
	var back []string
	for _, d := range adaptertest.ReceiveN(t, src, len(orderIDs), adaptertest.WaitTimeout) {
		back = append(back, d.Message().ID)
		require.NoError(t, d.Ack(ctx))
	}
	require.Equal(t, orderIDs, sorted(back), "the redriven messages on the source")
	adaptertest.AssertQuiet(t, src, adaptertest.QuietWindow)
	require.NoError(t, src.Close(ctx))
	dls, err := br.DeadLetters(ctx, source, name, 0)
	require.NoError(t, err)
	var stayed []string
	for _, d := range dls {
		stayed = append(stayed, d.Message.ID)
	}
	require.Equal(t, sorted(left), sorted(stayed), "the dead letters left")
	require.Empty(t, r.tab.Errors(), "console errors")
}

// flowOptions vary runFlow: shots saves the main pages' screenshots
// (browsertest.Shot, with ONCELY_SCREENSHOTS set); skipMessage goes from
// the group straight to its plan, leaving out one message's page;
// lateLetter dead-letters a sixth order between the plan and the redrive,
// which must move only the five planned (the plan's limit). That needs a
// destination read in one order (a single list, as on mem://): over
// several partitions the first five could include the late one.
type flowOptions struct {
	shots, skipMessage, lateLetter bool
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// flowNames returns a fresh source and consumer name: real brokers keep
// queues, topics and consumer groups between runs.
func flowNames() (string, string) {
	return adaptertest.SourceName("console"), fmt.Sprintf("ledger-%08x", rand.Uint32())
}

// TestBrowserFlowMemory is the flow on mem://; with ONCELY_SCREENSHOTS set
// it saves the screenshots of docs/console.md.
func TestBrowserFlowMemory(t *testing.T) {
	runFlow(t, "mem://", "payments", "ledger", flowOptions{shots: true, lateLetter: true})
}

func TestBrowserFlowKafka(t *testing.T) {
	source, name := flowNames()
	runFlow(t, "kafka://"+strings.Join(kafkatest.Brokers(t), ","), source, name, flowOptions{})
}

func TestBrowserFlowRabbitMQ(t *testing.T) {
	source, name := flowNames()
	runFlow(t, envtest.RabbitMQ(t), source, name, flowOptions{})
}

func TestBrowserFlowSQS(t *testing.T) {
	source, name := flowNames()
	// Each read of an SQS dead-letter queue ends with three empty receives
	// (3 s or more), so this run leaves out the message page (the others
	// cover it) to stay well inside the tab's deadline.
	runFlow(t, "sqs://us-east-1?endpoint="+envtest.SQS(t)+"&visibility_timeout=5s&wait=1", source, name, flowOptions{skipMessage: true})
}

func TestBrowserFlowNATS(t *testing.T) {
	source, name := flowNames()
	runFlow(t, envtest.NATS(t), source, name, flowOptions{})
}

func TestBrowserFlowRedis(t *testing.T) {
	source, name := flowNames()
	runFlow(t, envtest.Redis(t)+"?lease=5s", source, name, flowOptions{})
}
