package sqs

import "time"

// retryContext is the failure context of a retried message, kept in memory
// until the message comes back (SQS cannot change a message's attributes).
type retryContext struct {
	headers map[string]string
	expires time.Time
}

// maxRetryContexts bounds the retry contexts kept in memory.
const maxRetryContexts = 100_000

// settled forgets d once it is settled, and its retry context unless it was
// retried.
func (s *Source) settled(d *delivery, retried bool) {
	s.mu.Lock()
	delete(s.unsettled, d)
	if !retried {
		delete(s.retried, d.sqsID)
	}
	s.mu.Unlock()
}

// rememberRetry keeps the failure context of a retried message until it is
// received again, so the next attempt's handler and a later dead-letter copy
// see it. Entries expire after the delay plus two visibility timeouts.
func (s *Source) rememberRetry(sqsID string, headers map[string]string, after time.Duration) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.retried) >= maxRetryContexts {
		for id, rc := range s.retried {
			if now.After(rc.expires) || len(s.retried) >= maxRetryContexts {
				delete(s.retried, id)
			}
		}
	}
	s.retried[sqsID] = retryContext{headers: headers, expires: now.Add(after + 2*s.visibility + time.Minute)}
}

// retryHeaders returns the failure context remembered for sqsID, or nil.
// The caller must not modify it.
func (s *Source) retryHeaders(sqsID string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	rc, ok := s.retried[sqsID]
	if !ok {
		return nil
	}
	if time.Now().After(rc.expires) {
		delete(s.retried, sqsID)
		return nil
	}
	return rc.headers
}
