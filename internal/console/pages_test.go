package console

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
)

// The skeleton: every page answers, with its elements.
func TestPagesMemory(t *testing.T) {
	br := memBroker(t)
	source, name := names()
	seed(t, br, source, name, []letter{
		{id: "a1", body: []byte(`{"n":1}`), err: "order 17 not found"},
		{id: "a2", body: []byte(`{"n":2}`), err: "order 18 not found"},
		{id: "b1", body: []byte("plain"), err: "card 'x' declined"},
	}, 3)
	f := newFixture(t, br, func(c *Config) { c.Consumers = []Consumer{{Source: source, Name: name}} })
	body := f.page("/")
	require.Contains(t, body, `data-testid="consumers-table"`)
	require.Equal(t, []string{"3"}, testids(body, "dlq-depth"))
	require.Equal(t, []string{"3"}, testids(body, "dlq-depth-total"))
	require.Contains(t, body, `<p class="depth-total alert">`)

	body = f.page(consumerURL(source, name))
	require.Equal(t, []string{"2", "1"}, testids(body, "group-count"))
	require.Equal(t, []string{"permanent: order &lt;n&gt; not found", "permanent: card &#39;&lt;q&gt;&#39; declined"}, testids(body, "group-pattern"))

	body = f.page(consumerURL(source, name) + "messages?reason=permanent&text=ORDER")
	require.Equal(t, []string{"2"}, testids(body, "selected-count"))

	body = f.page(consumerURL(source, name) + "message?id=a1")
	require.Equal(t, []string{"json"}, testids(body, "body-kind"))
	require.Contains(t, body, "&#34;n&#34;: 1")

	body = f.page(consumerURL(source, name) + "plan?text=order")
	require.Equal(t, []string{"2"}, testids(body, "plan-selected"))
	require.True(t, strings.Contains(body, `data-testid="redrive-form"`))
	code, _ := f.get("/nope")
	require.Equal(t, http.StatusNotFound, code)

	// A group's plan, and one message's: each selects exactly its own.
	groups := GroupLetters(deadLetters(t, br, source, name), time.Now())
	require.Equal(t, 2, groups[0].Count)
	body = f.page(consumerURL(source, name) + "plan?group=" + groups[0].ID)
	require.Equal(t, []string{"2"}, testids(body, "plan-selected"))
	require.ElementsMatch(t, []string{"a1", "a2"}, testids(body, "plan-id"))
	body = f.page(consumerURL(source, name) + "plan?id=b1")
	require.Equal(t, []string{"b1"}, testids(body, "plan-id"))
	// Redrive one message.
	resp := f.post(consumerURL(source, name)+"redrive", url.Values{"id": {"b1"}, "limit": {"1"}, "rate": {"10"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	st := waitJob(t, f, strings.TrimPrefix(resp.Header.Get("Location"), "/jobs/"))
	require.Equal(t, jobDone, st.Status)
	require.Equal(t, 1, st.Redriven)
	require.ElementsMatch(t, []string{"a1", "a2"}, deadIDs(t, br, source, name))

	// Bad filters are a 400 that shows the (escaped) value.
	code, body = f.get(consumerURL(source, name) + "?reason=" + url.QueryEscape("<script>x</script>") + "&since=nope")
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, body, "unknown reason &#34;&lt;script&gt;x&lt;/script&gt;&#34;")
	require.Contains(t, body, `since: &#34;nope&#34; is not a time`)
}

func deadLetters(t *testing.T, br adapters.Broker, source, name string) []adapters.DeadLetter {
	t.Helper()
	dls, err := br.DeadLetters(t.Context(), source, name, 0)
	require.NoError(t, err)
	return dls
}
