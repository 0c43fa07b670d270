package console

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/store/postgres"
)

// Defaults of Config's fields.
const (
	DefaultRate      = 10.0
	DefaultMaxRate   = 1000.0
	DefaultScanLimit = 100_000
	// DefaultFilterBudget is Config.FilterBudget's default.
	DefaultFilterBudget = 2 * time.Second
	DefaultUser         = "console"
	// ConfirmWord is what a delete needs typed in its confirmation field.
	ConfirmWord = "delete"
)

// Consumer is one (source, consumer name) the overview lists.
type Consumer struct {
	Source string
	Name   string
}

// Config configures a Server. Broker and Pool are required; every other
// field has the default its comment gives.
type Config struct {
	// Broker holds the dead letters. Required. The Server does not close it.
	Broker adapters.Broker

	// Pool reaches the Postgres holding the idempotency claims (for plans)
	// and the console_audit table (migrations 0003, 0005, 0006). Required; not
	// closed.
	Pool *pgxpool.Pool

	// Schema holds the oncely tables. Default postgres.SchemaDefault.
	Schema string

	// Consumers are listed on the overview page with their lag and
	// dead-letter depth. Any other pair opens by URL. Default none.
	Consumers []Consumer

	// Tokens maps each login token to the name the audit table records
	// for what its sessions do; each must pass CheckToken. Empty: no
	// login, every request acts as User; only safe on a loopback address
	// (see CheckAddr).
	Tokens map[string]string

	// TokenHashes maps the SHA-256 of each further login token, in
	// lower-case hex, to the name the audit table records for its
	// sessions: per-user tokens whose list holds no secret. Their
	// strength cannot be checked here: generate them (NewToken). Default
	// none.
	TokenHashes map[string]string

	// User is the name recorded for actions when Tokens and TokenHashes
	// are empty.
	// Default DefaultUser.
	User string

	// ReadOnly answers every action (redrive, delete, cancel, rewind) with 403 Forbidden
	// and hides their buttons. Default false.
	ReadOnly bool

	// DefaultRate is the rate (messages per second) a redrive form
	// offers. Default DefaultRate.
	DefaultRate float64

	// MaxRate is the highest redrive rate accepted. Default DefaultMaxRate.
	MaxRate float64

	// ScanLimit is the most dead letters a page reads (groups, lists); a
	// page says when it was reached. Plans, redrives and deletes always
	// read the whole destination. Default DefaultScanLimit.
	ScanLimit int

	// FilterBudget is the longest a page (groups, messages) spends
	// filtering the dead letters it read. When it runs out the page shows
	// what the filter selected among those it scanned and says it is
	// partial ("scanned N of M; refine the filter"). Plans, redrives and
	// deletes are not bounded by it: they filter the whole destination.
	// Default DefaultFilterBudget.
	FilterBudget time.Duration

	// AllowedHosts are the host names or IP addresses, each optionally
	// with ":port" (then only on that port), that requests may carry in
	// their Host header besides localhost and the loopback addresses
	// (always allowed, on any port). Every other Host is answered 421
	// Misdirected Request before any handler runs, which defeats DNS
	// rebinding. Add the names browsers use to reach the console off
	// loopback, and the name a proxy forwards. Default none.
	AllowedHosts []string

	// TrustedProxies are the networks of the reverse proxies in front of
	// the console. From a peer in one of them X-Forwarded-For names the
	// client (its rightmost address outside these networks), for login
	// throttling and the audit table, and X-Forwarded-Proto "https" makes
	// the session cookie Secure. Forwarding headers from any other peer are
	// ignored. Default none: the connection's peer is the client.
	TrustedProxies []netip.Prefix

	// Logger logs jobs and errors. Default slog.Default().
	Logger *slog.Logger

	// Now is the clock the pages' ages ("5 min ago") and per-group trends
	// (last hour, last day) are computed from, and FilterBudget measured
	// by. Default time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.Schema == "" {
		c.Schema = postgres.SchemaDefault
	}
	if c.User == "" {
		c.User = DefaultUser
	}
	if c.DefaultRate == 0 {
		c.DefaultRate = DefaultRate
	}
	if c.MaxRate == 0 {
		c.MaxRate = DefaultMaxRate
	}
	if c.ScanLimit == 0 {
		c.ScanLimit = DefaultScanLimit
	}
	if c.FilterBudget == 0 {
		c.FilterBudget = DefaultFilterBudget
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.Broker == nil {
		errs = append(errs, errors.New("no Broker: it is required"))
	}
	if c.Pool == nil {
		errs = append(errs, errors.New("no Pool: it is required"))
	}
	if err := postgres.ValidateSchema(c.Schema); err != nil {
		errs = append(errs, fmt.Errorf("invalid Schema: %w", err))
	}
	for tok, name := range c.Tokens {
		if err := CheckToken(tok); err != nil {
			errs = append(errs, fmt.Errorf("the token of %q in Tokens: %w", name, err))
		}
		if strings.TrimSpace(name) == "" {
			errs = append(errs, errors.New("a token in Tokens has an empty name"))
		}
	}
	for _, h := range c.AllowedHosts {
		if err := validateAllowedHost(h); err != nil {
			errs = append(errs, err)
		}
	}
	for _, p := range c.TrustedProxies {
		if !p.IsValid() {
			errs = append(errs, fmt.Errorf("TrustedProxies entry %v: not a valid network", p))
		}
	}
	for h, name := range c.TokenHashes {
		if b, err := hex.DecodeString(h); err != nil || len(b) != sha256.Size || strings.ToLower(h) != h {
			errs = append(errs, fmt.Errorf("the token hash of %q in TokenHashes: want 64 lower-case hex digits (SHA-256)", name))
		}
		if strings.TrimSpace(name) == "" {
			errs = append(errs, errors.New("a hash in TokenHashes has an empty name"))
		}
	}
	if c.DefaultRate < 0 || c.MaxRate < 0 || c.DefaultRate > c.MaxRate {
		errs = append(errs, fmt.Errorf("DefaultRate %g and MaxRate %g: want 0 < DefaultRate <= MaxRate", c.DefaultRate, c.MaxRate))
	}
	if c.ScanLimit < 0 {
		errs = append(errs, fmt.Errorf("ScanLimit %d: want >= 0", c.ScanLimit))
	}
	if c.FilterBudget < 0 {
		errs = append(errs, fmt.Errorf("FilterBudget %v: want > 0", c.FilterBudget))
	}
	for _, p := range c.Consumers {
		if p.Source == "" || p.Name == "" {
			errs = append(errs, fmt.Errorf("incomplete Consumers entry %q/%q: source and name are both required", p.Source, p.Name))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("console: %w", errors.Join(errs...))
	}
	return nil
}

// loginRequired reports whether the browser must log in with a token.
func (c Config) loginRequired() bool { return len(c.Tokens) > 0 || len(c.TokenHashes) > 0 }

// ErrTokenRequired is returned (wrapped) by CheckAddr for an address other
// than loopback without a login token.
var ErrTokenRequired = errors.New("a login token is required to listen on an address other than loopback")

// CheckAddr returns ErrTokenRequired (wrapped) for serving on addr
// (host:port) without a token unless its host is a loopback address
// (127.0.0.0/8, ::1 or localhost); oncely console then generates a token.
// An empty host listens on every interface, so it needs a token too.
func CheckAddr(addr string, haveToken bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("console: address %q: %w", addr, err)
	}
	if haveToken || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("console: %q: %w", addr, ErrTokenRequired)
}
