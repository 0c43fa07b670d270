package kafka

import "context"

// crash simulates a process dying: no further commits, and the client goes
// away without committing what was settled.
func (s *Source) crash() {
	s.closeOnce.Do(func() { s.closeErr = s.close(context.Background(), false) })
}
