package console

import (
	"net/http"
	"sync"
)

// Costly pages (those that read and filter the dead letters: groups,
// messages, one message, plans) run at most one at a time per session
// when logins are on, per client address when not, and at most
// maxCostlyPages at a time in all; any more are answered 429 Too Many
// Requests at once, so that nobody can queue up work faster than it ends.
const maxCostlyPages = 4

// costlyPages counts the costly pages running.
type costlyPages struct {
	mu      sync.Mutex
	running map[string]bool
}

// acquire reports whether key may start a costly page, and marks it as
// running one.
func (c *costlyPages) acquire(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running[key] || len(c.running) >= maxCostlyPages {
		return false
	}
	if c.running == nil {
		c.running = map[string]bool{}
	}
	c.running[key] = true
	return true
}

func (c *costlyPages) release(key string) {
	c.mu.Lock()
	delete(c.running, key)
	c.mu.Unlock()
}

// costly runs next as a costly page (see costlyPages). It needs the
// identity that authed sets.
func (s *Server) costly(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := who(r)
		key := "client:" + id.client
		if s.cfg.loginRequired() {
			key = "session:" + id.session
		}
		if !s.costlyPages.acquire(key) {
			w.Header().Set("Retry-After", "1")
			s.fail(w, r, httpErrorf(http.StatusTooManyRequests,
				"another page that reads the dead letters is still loading for you (or several for others): wait for it, then reload"))
			return
		}
		defer s.costlyPages.release(key)
		next(w, r)
	}
}
