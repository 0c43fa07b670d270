package middleware_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A program that uses only the middleware package (Idempotency, Retry,
// Timeout, Logging, Health) links neither Prometheus nor OpenTelemetry: they
// come with middleware/metrics and middleware/tracing. The bug this catches
// is an import of either from the middleware package itself.
func TestMiddlewareLinksNoObservability(t *testing.T) {
	deps := func(pkg string) string {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		require.NoError(t, err, string(out))
		return string(out)
	}
	core := deps("github.com/oncely/oncely/middleware")
	require.Contains(t, core, "github.com/oncely/oncely/consumer\n", "the listing is real")
	var linked []string
	for _, pkg := range strings.Fields(core) {
		if strings.HasPrefix(pkg, "github.com/prometheus/") || strings.HasPrefix(pkg, "go.opentelemetry.io/") {
			linked = append(linked, pkg)
		}
	}
	require.Empty(t, linked, "middleware links observability packages")
	require.Contains(t, deps("github.com/oncely/oncely/middleware/metrics"), "github.com/prometheus/client_golang/prometheus\n")
	require.Contains(t, deps("github.com/oncely/oncely/middleware/tracing"), "go.opentelemetry.io/otel\n")
}
