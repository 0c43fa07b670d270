package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"sync"
	"time"
)

// Session cookie and CSRF form field names.
const (
	sessionCookie = "oncely_console_session"
	csrfField     = "csrf"
	sessionTTL    = 12 * time.Hour
	maxSessions   = 10_000
)

// session is one browser's login. Without tokens every browser gets an
// anonymous one as Config.User, so that CSRF tokens work the same way.
type session struct {
	user    string
	expires time.Time
}

// sessions keeps the logins in memory: restarting the console logs
// everyone out.
type sessions struct {
	secret []byte // keys the CSRF tokens
	mu     sync.Mutex
	m      map[string]session
}

func newSessions() *sessions {
	return &sessions{secret: randomBytes(32), m: map[string]session{}}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return b
}

// create starts a session for user and sets its cookie on w: HttpOnly,
// SameSite=Strict, Secure when the browser's connection is TLS (secure).
func (s *sessions) create(w http.ResponseWriter, secure bool, user string) string {
	id := base64.RawURLEncoding.EncodeToString(randomBytes(32))
	now := time.Now()
	s.mu.Lock()
	if len(s.m) >= maxSessions {
		for k, v := range s.m {
			if now.After(v.expires) || len(s.m) >= maxSessions {
				delete(s.m, k)
			}
		}
	}
	s.m[id] = session{user: user, expires: now.Add(sessionTTL)}
	s.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: secure, MaxAge: int(sessionTTL / time.Second)})
	return id
}

// lookup returns the session of r's cookie, if valid.
func (s *sessions) lookup(r *http.Request) (id string, user string, ok bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return "", "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	se, ok := s.m[c.Value]
	if !ok || time.Now().After(se.expires) {
		delete(s.m, c.Value)
		return "", "", false
	}
	return c.Value, se.user, true
}

// forget drops r's session, if any.
func (s *sessions) forget(r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		s.mu.Lock()
		delete(s.m, c.Value)
		s.mu.Unlock()
	}
}

// end forgets r's session and clears its cookie (Secure when secure).
func (s *sessions) end(w http.ResponseWriter, r *http.Request, secure bool) {
	s.forget(r)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: secure, MaxAge: -1})
}

// csrf is the CSRF token of session id: an HMAC of it, so it needs no
// storage and dies with the session.
func (s *sessions) csrf(id string) string {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte("csrf:" + id))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// ref is a reference to session id for the audit table: an HMAC of it,
// 16 characters, from which the ID cannot be found.
func (s *sessions) ref(id string) string {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte("ref:" + id))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))[:16]
}

// checkCSRF reports whether token is session id's CSRF token.
func (s *sessions) checkCSRF(id, token string) bool {
	return token != "" && hmac.Equal([]byte(token), []byte(s.csrf(id)))
}

// userOfToken returns the name of token in cfg.Tokens or, by its SHA-256,
// in cfg.TokenHashes, comparing every entry in constant time.
func userOfToken(cfg Config, token string) (string, bool) {
	found, name := false, ""
	for t, n := range cfg.Tokens {
		if subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1 {
			found, name = true, n
		}
	}
	sum := sha256.Sum256([]byte(token))
	hash := []byte(hex.EncodeToString(sum[:]))
	for h, n := range cfg.TokenHashes {
		if subtle.ConstantTimeCompare([]byte(h), hash) == 1 {
			found, name = true, n
		}
	}
	return name, found
}
