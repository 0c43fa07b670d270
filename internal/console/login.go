package console

import (
	"net/http"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) error {
	if len(s.cfg.Tokens) == 0 {
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
	if len(s.cfg.Tokens) == 0 {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return nil
	}
	next := safeNext(r.PostFormValue("next"))
	user, ok := userOfToken(s.cfg.Tokens, r.PostFormValue("token"))
	if !ok {
		s.render(w, r, http.StatusUnauthorized, "login", "Log in", loginData{Next: next, Error: "wrong token"})
		return nil
	}
	s.sessions.forget(r) // a new session ID at login: no fixation
	s.sessions.create(w, s.clientOf(r).https, user)
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
