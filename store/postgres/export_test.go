package postgres

// Queued returns how many Process calls s's batch mode has accepted.
func Queued(s *Store) int64 {
	if s.batch == nil {
		return 0
	}
	return s.batch.queued.Load()
}
