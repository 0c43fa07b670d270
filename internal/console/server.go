package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Server is the console's http.Handler. Create it with New; Close stops
// its redrive jobs.
type Server struct {
	cfg    Config
	claims *postgres.Store
	audit  auditLog
	// outboxDead lists the outbox's dead rows (the outbox page).
	outboxDead  *outbox.DeadLetters
	sessions    *sessions
	hosts       allowedHosts
	logins      *loginLimiter
	costlyPages costlyPages
	pages       map[string]*pageTemplate
	handler     http.Handler
	log         *slog.Logger

	// jobsCtx is the parent of every job's context; Close cancels it.
	jobsCtx    context.Context
	stopJobs   context.CancelFunc
	jobsWG     sync.WaitGroup
	jobsMu     sync.Mutex
	jobs       map[string]*job
	jobOrder   []string
	closedJobs bool
}

// New checks cfg and returns a Server. It reads nothing yet: a broker or
// Postgres that is down shows as an error on the pages that need it.
func New(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	claims, err := postgres.New(cfg.Pool, postgres.Config{Schema: cfg.Schema, NoPruning: true})
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	outboxDead, err := outbox.NewDeadLetters(cfg.Pool, cfg.Schema)
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, claims: claims, audit: newAuditLog(cfg.Pool, cfg.Schema), outboxDead: outboxDead, sessions: newSessions(),
		hosts: newAllowedHosts(cfg.AllowedHosts), logins: newLoginLimiter(time.Now), pages: pages, log: cfg.Logger, jobs: map[string]*job{}}
	s.jobsCtx, s.stopJobs = context.WithCancel(context.Background())
	s.handler = s.routes()
	return s, nil
}

// ServeHTTP serves the console.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Close cancels the running redrive jobs (each stops between two
// messages and writes its audit row) and waits for them, at most until ctx
// is done.
func (s *Server) Close(ctx context.Context) error {
	s.jobsMu.Lock()
	s.closedJobs = true
	s.jobsMu.Unlock()
	s.stopJobs()
	done := make(chan struct{})
	go func() {
		s.jobsWG.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("console: jobs still running: %w", ctx.Err())
	}
	return errors.Join(err, s.claims.Close(ctx))
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /login", s.page(s.loginPage))
	mux.HandleFunc("POST /login", s.page(s.login))
	mux.HandleFunc("POST /logout", s.authed(s.csrfChecked(s.logout)))

	mux.HandleFunc("GET /{$}", s.authed(s.page(s.overview)))
	mux.HandleFunc("GET /c/{source}/{consumer}/{$}", s.authed(s.costly(s.page(s.groupsPage))))
	mux.HandleFunc("GET /c/{source}/{consumer}/messages", s.authed(s.costly(s.page(s.messagesPage))))
	mux.HandleFunc("GET /c/{source}/{consumer}/message", s.authed(s.costly(s.page(s.messagePage))))
	mux.HandleFunc("GET /c/{source}/{consumer}/plan", s.authed(s.costly(s.page(s.planPage))))
	mux.HandleFunc("GET /c/{source}/{consumer}/replay", s.authed(s.costly(s.page(s.replayPage))))
	mux.HandleFunc("POST /c/{source}/{consumer}/replay", s.authed(s.action(s.rewind)))
	mux.HandleFunc("POST /c/{source}/{consumer}/redrive", s.authed(s.action(s.startRedrive)))
	mux.HandleFunc("POST /c/{source}/{consumer}/delete", s.authed(s.action(s.deleteLetters)))
	mux.HandleFunc("GET /jobs", s.authed(s.page(s.jobsPage)))
	mux.HandleFunc("GET /jobs/{job}", s.authed(s.page(s.jobPage)))
	mux.HandleFunc("GET /jobs/{job}/progress", s.authed(s.jobProgress))
	mux.HandleFunc("POST /jobs/{job}/cancel", s.authed(s.action(s.cancelJob)))
	mux.HandleFunc("GET /audit", s.authed(s.page(s.auditPage)))
	mux.HandleFunc("GET /audit/{row}", s.authed(s.page(s.auditRowPage)))
	mux.HandleFunc("GET /outbox", s.authed(s.page(s.outboxPage)))
	mux.HandleFunc("/", s.page(func(http.ResponseWriter, *http.Request) error {
		return httpErrorf(http.StatusNotFound, "no such page")
	}))
	return securityHeaders(s.hostChecked(http.NewCrossOriginProtection().Handler(mux)))
}

// securityHeaders sets the headers every answer carries: a strict
// Content-Security-Policy (no inline script or style, no framing, forms
// only to this origin), nosniff, no referrer, no caching.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "+
			"form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// identity is who sends a request: the session and its user, and the
// client address.
type identity struct {
	session string
	user    string
	client  string
}

type identityKey struct{}

// who returns the identity authed put in r's context.
func who(r *http.Request) identity {
	id, _ := r.Context().Value(identityKey{}).(identity)
	return id
}

// authed lets a request through with its identity: with tokens configured
// only from a logged-in session (others are sent to the login page, or
// get 401 for anything but a GET); without tokens every browser gets an
// anonymous session as Config.User.
func (s *Server) authed(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, user, ok := s.sessions.lookup(r)
		if !ok {
			if s.cfg.loginRequired() {
				if r.Method == http.MethodGet {
					http.Redirect(w, r, "/login?next="+urlQueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
					return
				}
				s.fail(w, r, httpErrorf(http.StatusUnauthorized, "log in first"))
				return
			}
			user = s.cfg.User
			id = s.sessions.create(w, s.clientOf(r).https, user)
		}
		next(w, r.WithContext(context.WithValue(r.Context(), identityKey{}, identity{session: id, user: user, client: s.clientOf(r).addr})))
	}
}

// csrfChecked refuses a POST whose csrf form field is not its session's
// token (403 Forbidden).
func (s *Server) csrfChecked(next func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return s.page(func(w http.ResponseWriter, r *http.Request) error {
		if !s.sessions.checkCSRF(who(r).session, r.PostFormValue(csrfField)) {
			return httpErrorf(http.StatusForbidden, "the form's CSRF token is missing or wrong: reload the page and try again")
		}
		return next(w, r)
	})
}

// action is an action's POST: refused with 403 in read-only mode, CSRF
// checked.
func (s *Server) action(next func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	checked := s.csrfChecked(next)
	return func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.ReadOnly {
			s.fail(w, r, httpErrorf(http.StatusForbidden, "the console runs read-only (--read-only): no redrive, delete, cancel or rewind"))
			return
		}
		checked(w, r)
	}
}

// httpError is an error page's status and message.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func httpErrorf(status int, format string, args ...any) error {
	return &httpError{status: status, msg: fmt.Sprintf(format, args...)}
}

// page adapts a handler that returns an error: an *httpError is shown with
// its status, any other error as 500 (and logged).
func (s *Server) page(h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.fail(w, r, err)
		}
	}
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	he := &httpError{}
	if !errors.As(err, &he) {
		s.log.ErrorContext(r.Context(), "console: request failed", "method", r.Method, "path", r.URL.Path, "error", err)
		he = &httpError{status: http.StatusInternalServerError, msg: err.Error()}
	}
	s.render(w, r, he.status, "error", "Error", errorData{Status: he.status, Message: he.msg})
}

type errorData struct {
	Status  int
	Message string
}
