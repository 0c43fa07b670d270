package adapters_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/adapters/rabbitmq"
	"github.com/oncely/oncely/internal/testenv"
)

// TestOpenRabbitMQWrongPassword opens amqp:// with a wrong password.
// Catches: the tools connection reporting a refused login as "no RabbitMQ
// answers" (after the 15 s dial timeout), and the password in the error.
func TestOpenRabbitMQWrongPassword(t *testing.T) {
	const secret = "wrong-s3cret-pw"
	u, err := url.Parse(testenv.RabbitMQ(t))
	require.NoError(t, err)
	u.User = url.UserPassword("guest", secret)
	start := time.Now()
	b, err := adapters.Open(context.Background(), u.String())
	require.Nil(t, b)
	require.Less(t, time.Since(start), 6*time.Second)
	require.ErrorIs(t, err, rabbitmq.ErrLoginRefused)
	require.Contains(t, err.Error(), `login refused for user "guest" (check the URL's user and password)`)
	require.NotContains(t, err.Error(), "no RabbitMQ answers")
	require.NotContains(t, err.Error(), secret)
}
