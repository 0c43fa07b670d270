package nats

import (
	"strings"
	"testing"
	"time"
)

// TestConfigValidate: every problem of a Config is reported at once, and
// the zero values get their documented defaults.
func TestConfigValidate(t *testing.T) {
	err := Config{Source: "a.*", Consumer: "x.y", Prefetch: -1, AckWait: time.Millisecond, MaxDeliver: -1, Replicas: -1}.withDefaults().validate()
	if err == nil {
		t.Fatal("validate accepted a broken config")
	}
	for _, want := range []string{"config.URL", "config.Source", "config.Consumer", "config.Prefetch", "config.AckWait", "config.MaxDeliver", "config.PollWait", "config.Replicas"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	c := Config{URL: "nats://127.0.0.1:4222", Source: "payments", Consumer: "ledger"}.withDefaults()
	if err := c.validate(); err != nil {
		t.Fatalf("a minimal config: %v", err)
	}
	if c.KeyHeader != KeyHeaderDefault || c.Prefetch != PrefetchDefault || c.AckWait != AckWaitDefault || c.MaxDeliver != MaxDeliverDefault ||
		c.MaxAckPending != MaxAckPendingDefault || c.PollWait != PollWaitDefault || c.RPCTimeout != RPCTimeoutDefault || c.Logger == nil {
		t.Errorf("defaults: %+v", c)
	}
}
