package console

import "net/http"

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
	s.sessions.create(w, r, user)
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) error {
	s.sessions.end(w, r)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
	return nil
}

// safeNext keeps a post-login redirect on this site: a path starting with
// one slash, else "/".
func safeNext(next string) string {
	if len(next) < 1 || next[0] != '/' || (len(next) > 1 && (next[1] == '/' || next[1] == '\\')) {
		return "/"
	}
	return next
}
