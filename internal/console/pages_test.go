package console

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The skeleton: every page answers, with its elements.
func TestPagesMemory(t *testing.T) {
	br := memBroker(t)
	source, name := names()
	seed(t, br, source, name, []letter{
		{id: "a1", body: []byte(`{"n":1}`), err: "order 17 not found"},
		{id: "a2", body: []byte(`{"n":2}`), err: "order 18 not found"},
		{id: "b1", body: []byte("plain"), err: "card 'x' declined"},
	})
	f := newFixture(t, br, func(c *Config) { c.Consumers = []Consumer{{Source: source, Name: name}} })
	body := f.page("/")
	require.Contains(t, body, `data-testid="consumers-table"`)
	require.Equal(t, []string{"3"}, testids(body, "dlq-depth"))

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
}
