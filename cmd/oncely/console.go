package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/oncely/oncely/internal/console"
	"github.com/oncely/oncely/store/postgres"
)

func runConsole(ctx context.Context, a *app, args []string) error {
	fs := a.flags("console", "oncely console --broker URL --database-url URL [--addr 127.0.0.1:8080] [--watch SOURCE/CONSUMER] [--token T --user NAME | --token-file F] [--read-only] [--allowed-host NAME] [--tls-cert F --tls-key F]", `
Serves the dead-letter console, a web UI: consumers with their lag and
dead-letter depth, dead letters grouped by failure fingerprint, messages
with their headers, failure and body, plans (which selected dead letters
were already applied), rate-limited redrives with live progress and cancel,
deletes, and the audit table of every action (Postgres, migrations 0003,
0005 and 0006: run oncely migrate first). See docs/console.md.

It listens on 127.0.0.1:8080 by default, without a login. On any address
other than loopback the browser logs in with a token: --token (or
ONCELY_CONSOLE_TOKEN, which keeps it out of the process list), --token-file,
or else one the console generates at start and prints once to stderr (a new
one each run); serve it over TLS there (--tls-cert and --tls-key, or a TLS
proxy named with --trusted-proxy).
The audit table names the actor: --user (default $USER) for --token, each
token's NAME for --token-file (per-user tokens, stored as SHA-256: add one
with printf 'NAME: %s\n' "$(printf %s "$TOKEN" | sha256sum | cut -c1-64)").
--read-only refuses every action.

The console answers only requests whose Host header is localhost, a
loopback address, the --addr host (every address of this machine when
--addr is a wildcard such as :8080) or an --allowed-host name; any other
gets 421, so a web page that rebinds its DNS name to this machine reads
nothing. Behind a proxy, add the name the proxy forwards.`)
	brokerURL := fs.String("broker", "", "broker URL (default $BROKER_URL; prefer the variable for a URL with a password or token: a command line shows in the process list): "+strings.Join(brokerForms(), " | "))
	db := databaseFlags(fs)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address; other than loopback with a login token (--token, --token-file, or one generated and printed at start)")
	var watch watchFlag
	fs.Var(&watch, "watch", "a SOURCE/CONSUMER the overview lists (repeat, or comma-separate); others open by URL")
	token := fs.String("token", "", "login token, random, at least 22 characters and 128 bits (default $ONCELY_CONSOLE_TOKEN); off loopback without it or --token-file, one is generated and printed once")
	tokenFile := fs.String("token-file", "", "per-user tokens: a file of NAME: SHA256-OF-TOKEN lines; the audit names each token's user")
	user := fs.String("user", "", "name the audit table records for actions (default $USER, else console)")
	readOnly := fs.Bool("read-only", false, "refuse redrives, deletes and cancels (403) and hide their buttons")
	rate := fs.Float64("rate", console.DefaultRate, "redrive rate the forms offer, messages per second")
	maxRate := fs.Float64("max-rate", console.DefaultMaxRate, "highest redrive rate accepted")
	scanLimit := fs.Int("scan-limit", console.DefaultScanLimit, "most dead letters a page reads (plans and actions read all)")
	filterBudget := fs.Duration("filter-budget", console.DefaultFilterBudget, "longest a page filters the dead letters it read; then it shows what it scanned and says it is partial")
	tlsCert := fs.String("tls-cert", "", "serve HTTPS with this PEM certificate (with --tls-key); the session cookie is then Secure")
	tlsKey := fs.String("tls-key", "", "the PEM private key of --tls-cert")
	var trustedProxies prefixFlag
	fs.Var(&trustedProxies, "trusted-proxy", "a CIDR (or address) of a reverse proxy in front of the console (repeat, or comma-separate):\n"+
		"its X-Forwarded-For names the client and its X-Forwarded-Proto https makes the cookie Secure")
	var allowedHosts listFlag
	fs.Var(&allowedHosts, "allowed-host", "a host name (or NAME:PORT) browsers or a proxy use to reach the console (repeat, or comma-separate);\n"+
		"localhost, loopback addresses and the --addr host are always allowed, any other Host header gets 421")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *token == "" {
		*token = a.getenv("ONCELY_CONSOLE_TOKEN")
	}
	var tokenHashes map[string]string
	if *tokenFile != "" {
		var err error
		if tokenHashes, err = readTokenFile(*tokenFile); err != nil {
			return usagef("console: --token-file: %v", err)
		}
	}
	if *token != "" {
		if err := console.CheckToken(*token); err != nil {
			return usagef("console: --token: %v; a random one, such as this fresh %s, passes", err, console.NewToken())
		}
	}
	generated := false
	if err := console.CheckAddr(*addr, *token != "" || len(tokenHashes) > 0); errors.Is(err, console.ErrTokenRequired) {
		*token, generated = console.NewToken(), true
	} else if err != nil {
		return usagef("console: --addr: %v", err)
	}
	hosts, err := boundHosts(*addr)
	if err != nil {
		return usagef("console: --addr: %v", err)
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		return usagef("console: give --tls-cert and --tls-key together")
	}
	if *user == "" {
		*user = a.getenv("USER")
	}
	br, err := a.openBroker(ctx, "console", *brokerURL, nil)
	if err != nil {
		return err
	}
	defer br.Close()
	pool, err := db.open(ctx, a, "console")
	if err != nil {
		return err
	}
	defer pool.Close()
	ms, err := postgres.Migrations()
	if err != nil {
		return err
	}
	v, err := postgres.Version(ctx, pool, *db.schema)
	if err != nil {
		return fmt.Errorf("console: reading the schema version (is Postgres reachable at --database-url?): %w", err)
	}
	if v < len(ms) {
		return fmt.Errorf("console: schema %s is at version %d, this build needs %d (the audit table): run oncely migrate", *db.schema, v, len(ms))
	}
	cfg := console.Config{Broker: br, Pool: pool, Schema: *db.schema, Consumers: watch, User: *user, ReadOnly: *readOnly,
		DefaultRate: *rate, MaxRate: *maxRate, ScanLimit: *scanLimit, FilterBudget: *filterBudget, AllowedHosts: append(hosts, allowedHosts...), TokenHashes: tokenHashes,
		TrustedProxies: trustedProxies, Logger: slog.New(slog.NewTextHandler(a.stderr, nil))}
	if (*token != "" || len(tokenHashes) > 0) && *tlsCert == "" && len(trustedProxies) == 0 && !isLoopbackAddr(*addr) {
		cfg.Logger.Warn("console: the login token and session cookie travel in plain HTTP: serve TLS (--tls-cert, --tls-key), "+
			"or put a TLS proxy in front and name it with --trusted-proxy", "addr", *addr)
	}
	if *token != "" {
		name := *user
		if name == "" {
			name = console.DefaultUser
		}
		cfg.Tokens = map[string]string{*token: name}
	}
	srv, err := console.New(cfg)
	if err != nil {
		return usagef("%v", err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("console: %w", err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	mode := ""
	if *readOnly {
		mode = ", read-only"
	}
	scheme := "http"
	if *tlsCert != "" {
		scheme = "https"
	}
	if generated {
		// Written once, to the terminal only: never through the logger.
		fmt.Fprintf(a.stderr, "console: --addr %s is not loopback and no --token or --token-file was given: log in with this token, generated for this run and shown only now:\n\n    %s\n\n", *addr, *token)
	}
	fmt.Fprintf(a.stdout, "console on %s://%s (%s%s; stop with Ctrl-C)\n", scheme, ln.Addr(), br.Kind(), mode)
	served := make(chan error, 1)
	go func() {
		if *tlsCert != "" {
			served <- hs.ServeTLS(ln, *tlsCert, *tlsKey)
			return
		}
		served <- hs.Serve(ln)
	}()
	select {
	case err = <-served:
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 40*time.Second)
	defer cancel()
	// Jobs first: each stops between two messages and writes its audit row.
	cerr := srv.Close(sctx)
	herr := hs.Shutdown(sctx)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(err, cerr, herr)
}
