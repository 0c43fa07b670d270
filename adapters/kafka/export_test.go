package kafka

import "context"

// crash simulates a process dying: no further commits, and the client goes
// away without committing what was settled.
func (s *Source) crash() {
	s.closeOnce.Do(func() { s.closeErr = s.close(context.Background(), false) })
}

// assigned returns the partitions of topic this Source holds.
func (s *Source) assigned(topic string) []int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ps []int32
	for k := range s.parts {
		if k.topic == topic {
			ps = append(ps, k.partition)
		}
	}
	return ps
}
