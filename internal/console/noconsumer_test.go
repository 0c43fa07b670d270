package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/internal/envtest"
)

func TestUnknownConsumerMemory(t *testing.T) { testUnknownConsumer(t, memBroker(t)) }
func TestUnknownConsumerRedis(t *testing.T)  { testUnknownConsumer(t, openBroker(t, envtest.Redis(t))) }
func TestUnknownConsumerRabbitMQ(t *testing.T) {
	testUnknownConsumer(t, openBroker(t, envtest.RabbitMQ(t)))
}

func openBroker(t *testing.T, rawURL string) adapters.Broker {
	t.Helper()
	br, err := adapters.Open(t.Context(), rawURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = br.Close() })
	return br
}

// testUnknownConsumer: the pages of a consumer name that never read its
// source answer 404 naming the consumers that exist (RabbitMQ: saying they
// cannot be listed), instead of "No dead letters match"; a consumer that
// started and dead-lettered nothing still gets its (empty) pages.
func testUnknownConsumer(t *testing.T, br adapters.Broker) {
	source, name := names()
	seed(t, br, source, name, []letter{{id: "u1", err: "boom"}}, 1)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	fresh, err := br.Source(ctx, source, name+"-fresh")
	require.NoError(t, err)
	require.NoError(t, fresh.Close(ctx))
	f := newFixture(t, br, nil)

	base := "/c/" + url.PathEscape(source) + "/"
	require.Contains(t, f.page(base+url.PathEscape(name+"-fresh")+"/"), "No dead letters")
	typo := name + "-typo"
	for _, page := range []string{"", "messages", "plan"} {
		code, body := f.get(base + url.PathEscape(typo) + "/" + page)
		require.Equal(t, http.StatusNotFound, code, "page %q of %s: %s", page, typo, body)
		require.Contains(t, body, fmt.Sprintf("consumer &#34;%s&#34; does not exist on source &#34;%s&#34;", typo, source), page)
		if br.Kind() == "rabbitmq" {
			require.Contains(t, body, "cannot be listed", page)
		} else {
			require.Contains(t, body, fmt.Sprintf("its consumers are &#34;%s&#34;, &#34;%s-fresh&#34;", name, name), page)
		}
	}
	resp := f.post(base+url.PathEscape(typo)+"/delete", url.Values{"limit": {"10"}, "confirm": {ConfirmWord}})
	defer resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	_, err = br.DeadLetters(context.Background(), source, typo, 0)
	require.ErrorIs(t, err, adapters.ErrNoConsumer, "the refused pages created nothing")
	require.False(t, strings.Contains(typo, "/"))
}
