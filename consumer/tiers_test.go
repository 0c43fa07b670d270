package consumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

// tierSource records what LimitTiers was told.
type tierSource struct {
	consumer.Source
	told []time.Duration
}

func (s *tierSource) LimitTiers(longest time.Duration) { s.told = append(s.told, longest) }

// TestNewLimitsTiers checks New tells a TierLimiter its policy's reach,
// once.
func TestNewLimitsTiers(t *testing.T) {
	src := &tierSource{Source: memory.NewBroker().NewSource("src", "test")}
	noop := consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return nil })
	p := retry.Policy{MaxAttempts: 3, InitialInterval: time.Second, MaxInterval: 2 * time.Second}
	_, err := consumer.New(src, noop, consumer.Config{Name: "test", Retry: p, Duplicates: consumer.AllowDuplicates("test")})
	if err != nil {
		t.Fatal(err)
	}
	if len(src.told) != 1 || src.told[0] != p.Reach() {
		t.Fatalf("LimitTiers told %v, want once %s", src.told, p.Reach())
	}
}
