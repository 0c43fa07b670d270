// Package redact hides the credentials of broker and database URLs before
// they reach an error, a log line, a metric or a page. It works on the raw
// string and never needs the URL to parse: a password holding an unencoded
// '/', '#', '?', '@', ':' or '%' is hidden as well as a well-formed one.
package redact

import (
	"net/url"
	"slices"
	"strings"
)

// Mask replaces what URL hides.
const Mask = "xxxxx"

// minSecret is the shortest secret Error scrubs from messages: shorter ones
// would rewrite ordinary words, and are no secret anyway.
const minSecret = 4

// URL returns raw with its user info hidden. The user info is everything
// between "://" (or the string's start when there is none) and the last '@'
// in the string: whatever the password holds, the last '@' ends it. When
// that stretch reads user:password with a plain user name, the user is kept
// ("amqp://guest:xxxxx@host"); otherwise (a token such as a NATS
// nats://TOKEN@host, or a stretch that also swallowed part of a query) all
// of it is hidden. Percent-encoded URLs in query parameter values
// (sqs://…?endpoint=http%3A%2F%2Fuser%3Apass%40host) lose their user info
// the same way. A URL without an '@' comes back unchanged.
func URL(raw string) string {
	start := 0
	if sep := strings.Index(raw, "://"); sep >= 0 {
		start = sep + 3
	}
	at := strings.LastIndex(raw[start:], "@")
	if at < 0 {
		return redactQuery(raw)
	}
	userinfo := raw[start : start+at]
	kept := ""
	if user, _, ok := strings.Cut(userinfo, ":"); ok && user != "" && !strings.ContainsAny(user, "/?#@") {
		kept = user + ":"
	}
	return raw[:start] + kept + Mask + redactQuery(raw[start+at:])
}

// Ambiguous reports whether raw has an '@' that URL parsers do not read as
// the end of the user info: a '/', '?' or '#' comes before the last '@'
// after "://" (an unencoded one in a password, or an unencoded URL with
// user info in a query value). Such a URL parses into something else than
// meant, with pieces of the password in the host, path, query or fragment,
// where no redaction finds them: refuse it before parsing.
func Ambiguous(raw string) bool {
	start := 0
	if sep := strings.Index(raw, "://"); sep >= 0 {
		start = sep + 3
	}
	at := strings.LastIndex(raw[start:], "@")
	return at >= 0 && strings.ContainsAny(raw[start:start+at], "/?#")
}

// redactQuery applies URL to every query parameter value of s (after its
// first '?') that holds an '@' once decoded.
func redactQuery(s string) string {
	head, q, ok := strings.Cut(s, "?")
	if !ok || !strings.Contains(q, "%40") {
		return s
	}
	parts := strings.Split(q, "&")
	for i, p := range parts {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			continue
		}
		if d, err := url.QueryUnescape(v); err == nil && strings.Contains(d, "@") {
			parts[i] = k + "=" + url.QueryEscape(URL(d))
		}
	}
	return head + "?" + strings.Join(parts, "&")
}

// Secrets returns the secrets raw carries, as they may appear in another
// program's message: the user info's password (or the whole user info when
// it has no ':', a token), raw and percent-decoded, the same for URLs
// nested in its query, longest first. Secrets shorter than four bytes are
// left out.
func Secrets(raw string) []string {
	var out []string
	add := func(s string) {
		if len(s) < minSecret {
			return
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	var walk func(raw string, depth int)
	walk = func(raw string, depth int) {
		start := 0
		if sep := strings.Index(raw, "://"); sep >= 0 {
			start = sep + 3
		}
		if at := strings.LastIndex(raw[start:], "@"); at >= 0 {
			userinfo := raw[start : start+at]
			secret := userinfo
			if _, pass, ok := strings.Cut(userinfo, ":"); ok {
				secret = pass
			}
			add(secret)
			if s, err := url.PathUnescape(secret); err == nil {
				add(s)
			}
			if s, err := url.QueryUnescape(secret); err == nil {
				add(s)
			}
			if u, err := url.Parse(raw); err == nil && u.User != nil {
				if p, ok := u.User.Password(); ok {
					add(p)
					// As url.URL.String writes it again.
					add(strings.TrimPrefix(url.UserPassword("", p).String(), ":"))
				} else {
					add(u.User.Username())
					add(u.User.String())
				}
			}
		}
		if depth > 0 {
			return
		}
		if _, q, ok := strings.Cut(raw, "?"); ok {
			if vals, err := url.ParseQuery(q); err == nil {
				for _, vs := range vals {
					for _, v := range vs {
						if strings.Contains(v, "@") {
							walk(v, depth+1)
						}
					}
				}
			}
		}
	}
	walk(raw, 0)
	// Longest first, so that a secret containing another is replaced whole.
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// Text returns s with every secret in secrets replaced by Mask.
func Text(s string, secrets []string) string {
	for _, sec := range secrets {
		s = strings.ReplaceAll(s, sec, Mask)
	}
	return s
}

// Error returns err with the secrets of rawURL (Secrets) scrubbed from its
// message, for errors of libraries that echo the URL they were given. The
// result wraps err: errors.Is and errors.As see through it. Nil stays nil,
// and err comes back as it is when its message holds no secret.
func Error(err error, rawURL string) error {
	if err == nil {
		return nil
	}
	secrets := Secrets(rawURL)
	msg := err.Error()
	if clean := Text(msg, secrets); clean != msg {
		return &scrubbed{msg: clean, err: err}
	}
	return err
}

// scrubbed is an error whose message had secrets removed.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }
