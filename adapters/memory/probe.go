package memory

import (
	"context"
	"fmt"
)

// Probe reports whether the broker answers (see consumer.Prober). The memory
// broker is down while faults injected with InjectFaults remain, so a test's
// injected failures are an outage, not a fault of the message.
func (s *Source) Probe(context.Context) error {
	for op := range s.q.b.faults {
		if n := s.q.b.faults[op].Load(); n > 0 {
			return fmt.Errorf("memory: %d injected %s faults pending: %w", n, Op(op), ErrInjected)
		}
	}
	return nil
}
