package console

import (
	"net/netip"
	"sync"
	"time"
)

// Login throttling: per client address, the first freeLoginFailures wrong
// tokens cost nothing; each one after locks the address out of logging in
// (even with the right token) for firstLoginLock, doubling up to
// maxLoginLock. Globally, wrong tokens from every address together draw
// on a bucket of globalLoginBurst refilled at globalLoginRate a second;
// while it is empty nobody can log in. An IPv6 client is its /64.
const (
	freeLoginFailures = 5
	firstLoginLock    = time.Second
	maxLoginLock      = 15 * time.Minute
	globalLoginBurst  = 100
	globalLoginRate   = 1.0
	// loginForget is how long after its last failure an address that is
	// not locked is forgotten.
	loginForget = time.Hour
	// maxLoginClients bounds the addresses remembered; past it new ones
	// are held by the global bucket only.
	maxLoginClients = 10_000
)

// loginLimiter throttles failed logins.
type loginLimiter struct {
	now     func() time.Time
	mu      sync.Mutex
	clients map[string]*loginFailures
	tokens  float64 // the global bucket
	filled  time.Time
}

type loginFailures struct {
	count int
	last  time.Time
	until time.Time // locked until then
}

func newLoginLimiter(now func() time.Time) *loginLimiter {
	return &loginLimiter{now: now, clients: map[string]*loginFailures{}, tokens: globalLoginBurst, filled: now()}
}

// loginKey is the address the limiter counts: an IPv6 client's /64.
func loginKey(addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil || a.Is4() {
		return addr
	}
	p, _ := a.Prefix(64)
	return p.String()
}

// refillLocked adds the tokens earned since the last refill.
func (l *loginLimiter) refillLocked(now time.Time) {
	l.tokens = min(globalLoginBurst, l.tokens+now.Sub(l.filled).Seconds()*globalLoginRate)
	l.filled = now
}

// allow reports whether addr may try a token now, and else how long it
// must wait.
func (l *loginLimiter) allow(addr string) (time.Duration, bool) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refillLocked(now)
	if f := l.clients[loginKey(addr)]; f != nil && now.Before(f.until) {
		return f.until.Sub(now), false
	}
	if l.tokens < 1 {
		return time.Duration((1 - l.tokens) / globalLoginRate * float64(time.Second)), false
	}
	return 0, true
}

// failed counts a wrong token from addr and returns its failures in a row
// and the lock-out it now has (0: none).
func (l *loginLimiter) failed(addr string) (int, time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refillLocked(now)
	l.tokens = max(0, l.tokens-1)
	key := loginKey(addr)
	f := l.clients[key]
	if f == nil {
		if len(l.clients) >= maxLoginClients {
			l.forgetLocked(now)
		}
		if len(l.clients) >= maxLoginClients {
			return 1, 0
		}
		f = &loginFailures{}
		l.clients[key] = f
	}
	f.count++
	f.last = now
	if f.count <= freeLoginFailures {
		return f.count, 0
	}
	lock := maxLoginLock
	if shift := f.count - freeLoginFailures - 1; shift < 20 {
		lock = min(maxLoginLock, firstLoginLock<<shift)
	}
	f.until = now.Add(lock)
	return f.count, lock
}

// succeeded forgets addr's failures.
func (l *loginLimiter) succeeded(addr string) {
	l.mu.Lock()
	delete(l.clients, loginKey(addr))
	l.mu.Unlock()
}

// forgetLocked drops the addresses neither locked nor failing lately.
func (l *loginLimiter) forgetLocked(now time.Time) {
	for k, f := range l.clients {
		if !now.Before(f.until) && now.Sub(f.last) > loginForget {
			delete(l.clients, k)
		}
	}
}
