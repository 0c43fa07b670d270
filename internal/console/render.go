package console

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// pageTemplate is one page: the layout plus the page's "content".
type pageTemplate struct{ t *template.Template }

// pageNames are the templates/<name>.html files, each a page.
var pageNames = []string{"login", "error", "overview", "groups", "messages", "message", "plan", "jobs", "job", "deleted", "audit", "auditrow", "outbox", "replay"}

var funcs = template.FuncMap{
	"consumerURL": consumerURL,
	"ago":         ago,
	"nextStep":    nextStep,
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"orDash": func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	},
	"count": func(n int64) string {
		if n < 0 {
			return "-"
		}
		return fmt.Sprint(n)
	},
	"short": func(s string, n int) string {
		s = strings.Join(strings.Fields(s), " ")
		if r := []rune(s); len(r) > n {
			return string(r[:n-1]) + "…"
		}
		return s
	},
}

func parsePages() (map[string]*pageTemplate, error) {
	out := map[string]*pageTemplate{}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		out[name] = &pageTemplate{t: t}
	}
	return out, nil
}

// view is what every page's template gets.
type view struct {
	Title    string
	User     string
	CSRF     string
	ReadOnly bool
	// Login: tokens are configured, so the layout offers a logout.
	Login bool
	// Now is Config.Now at rendering, for ages.
	Now  time.Time
	Data any
}

// render writes page name with data, buffered so a template error is a
// clean 500.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name, title string, data any) {
	id := who(r)
	v := view{Title: title, User: id.user, ReadOnly: s.cfg.ReadOnly, Login: s.cfg.loginRequired(), Now: s.cfg.Now(), Data: data}
	if id.session != "" {
		v.CSRF = s.sessions.csrf(id.session)
	}
	var buf bytes.Buffer
	if err := s.pages[name].t.Execute(&buf, v); err != nil {
		s.log.ErrorContext(r.Context(), "console: rendering", "page", name, "error", err)
		http.Error(w, "console: rendering the page failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// consumerURL is the path of a consumer's pages, each name path-escaped.
func consumerURL(source, name string) string {
	return "/c/" + url.PathEscape(source) + "/" + url.PathEscape(name) + "/"
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }
