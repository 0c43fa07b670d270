package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) error {
	if !s.cfg.loginRequired() {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return nil
	}
	s.render(w, r, http.StatusOK, "login", "Log in", loginData{Next: safeNext(r.URL.Query().Get("next"))})
	return nil
}

type loginData struct {
	Next  string
	Error string
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) error {
	if !s.cfg.loginRequired() {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return nil
	}
	next := safeNext(r.PostFormValue("next"))
	c := s.clientOf(r)
	if wait, ok := s.logins.allow(c.addr); !ok {
		wait = max(time.Second, (wait + time.Second - 1).Truncate(time.Second)) // whole seconds, rounded up
		w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)))
		s.log.DebugContext(r.Context(), "console: login refused: too many wrong tokens", "client", c.addr, "retry_after", wait)
		s.render(w, r, http.StatusTooManyRequests, "login", "Log in", loginData{Next: next,
			Error: fmt.Sprintf("too many wrong tokens: try again in %s", wait)})
		return nil
	}
	user, ok := userOfToken(s.cfg, r.PostFormValue("token"))
	if !ok {
		n, lock := s.logins.failed(c.addr)
		s.log.WarnContext(r.Context(), "console: login failed: wrong token", "client", c.addr, "failures_in_a_row", n, "locked_for", lock)
		s.render(w, r, http.StatusUnauthorized, "login", "Log in", loginData{Next: next, Error: "wrong token"})
		return nil
	}
	s.logins.succeeded(c.addr)
	s.log.InfoContext(r.Context(), "console: logged in", "client", c.addr, "user", user)
	s.sessions.forget(r) // a new session ID at login: no fixation
	s.sessions.create(w, c.https, user)
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) error {
	s.sessions.end(w, r, s.clientOf(r).https)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
	return nil
}

// safeNext keeps a post-login redirect on this site: next must parse as
// a relative URL (no scheme, host or user) whose path begins with one '/'
// followed by something other than '/' or '\' and holds no '\', as it is
// and percent-decoded once, and no control character may appear anywhere
// in it, as it is or decoded. Anything else gives "/". Browsers drop tabs
// and newlines from a URL and read '\' as '/', so "/\t/evil" and "/\\evil"
// would leave the site.
func safeNext(next string) string {
	path, _, _ := strings.Cut(next, "?")
	path, _, _ = strings.Cut(path, "#")
	decodedPath, err1 := url.PathUnescape(path)
	decoded, err2 := url.PathUnescape(next)
	if err1 != nil || err2 != nil || !sitePath(path) || !sitePath(decodedPath) || hasControl(next) || hasControl(decoded) {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") {
		return "/"
	}
	return next
}

// sitePath reports whether p starts with exactly one '/' followed by a
// character other than '/' or '\' (or ends there) and holds no '\'.
func sitePath(p string) bool {
	return p != "" && p[0] == '/' && !(len(p) > 1 && p[1] == '/') && !strings.Contains(p, "\\")
}

// hasControl reports whether s holds a control character or invalid UTF-8.
func hasControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return true
		}
	}
	return false
}
