// Package console is the dead-letter console that `oncely console` serves:
// server-rendered pages (html/template, assets embedded with go:embed, one
// small script for live progress) over an adapters.Broker and the Postgres
// of the idempotency claims.
//
// Pages: the consumers with their lag and dead-letter depth, the depth
// emphasised and totalled (/); a consumer's dead letters grouped by
// failure fingerprint (reason, error type, normalised error text, first
// stack frame) with counts, the trend (last hour, last day) and first and
// last failure (/c/{source}/{consumer}/); a selection's messages
// (…/messages); one message: reason, attempts, age, error and a one-line
// next step for the reason, then the body, then the rest of the failure
// context and the headers (…/message?id=); a plan (…/plan): how many a
// filter selects in the whole destination, which have an idempotency
// claim (a redrive is a no-op for them) and which not; a replay plan on a
// log broker (…/replay?to=): per partition the records a rewind covers and
// how many have a claim (internal/replayplan), or, on a queue broker, why
// replay does not apply; redrive jobs
// (/jobs, /jobs/{id}); the audit table (/audit); the outbox's dead rows
// with the broker's reasons (/outbox, read-only: oncely outbox redrive
// moves them back). Every consumer page takes the filters reason, text,
// since, until, group and id as query values (see Filter). Times show as
// ages ("5 min ago") by Config.Now, the exact UTC time in the title.
//
// Actions, all POST with a CSRF token and refused (403) in read-only mode:
// a redrive (…/redrive) runs in the background at a rate, with a progress
// page and a cancel (/jobs/{id}/cancel) that stops between two messages;
// a delete (…/delete) needs ConfirmWord typed; a rewind (POST …/replay)
// needs "rewind" typed, is refused while the group has live members, and
// leaves the claims; with its reprocess field it needs "reprocess" typed
// and also deletes the claims of exactly the covered records, in one
// transaction with its audit row, as oncely replay --reprocess. Redrive and delete take at most the plan's
// count (limit) of what the filter selects, and each is written to the
// console_audit table (migrations 0003, 0005, 0006): who, from which address and
// session, when, what, counts.
//
// Safety: a Host header other than localhost, a loopback address or
// Config.AllowedHosts is answered 421 before any handler runs (no DNS
// rebinding); http.CrossOriginProtection on every request; with
// Config.Tokens or Config.TokenHashes a login (throttled per client and
// globally, failures logged; tokens checked by CheckToken; the redirect
// after it kept on the site) sets a SameSite=Strict HttpOnly session
// cookie, Secure over TLS or from a Config.TrustedProxies proxy that
// forwarded https; a strict Content-Security-Policy (no inline script),
// nosniff and frame-ancestors 'none'; every value from a message is
// escaped by html/template, bodies are shown as pretty JSON, text or a hex
// dump, cut when long. Pages that read the dead letters run one at a time
// per session or client (429 otherwise), and the text filter searches 64
// KiB per field within Config.FilterBudget. CheckAddr reports a
// non-loopback address without a token (oncely console generates one).
//
// # Element contract
//
// Browser tests find elements by data-testid; these names are kept stable
// (TestElementContract checks that the templates use no other):
//
//	layout:    nav nav-overview nav-jobs nav-audit nav-outbox read-only-badge user logout
//	errors:    error-message
//	login:     login-form login-token login-submit login-error
//	overview:  dlq-depth-total consumers-table consumer-row (data-source, data-consumer)
//	           consumer-link lag dlq-depth backlog-error no-consumers open-form open-source open-consumer open-submit
//	filters:   filter-form filter-reason filter-text filter-since filter-until filter-submit filter-clear
//	groups:    consumer-name source-name groups-total selected-count all-messages-link plan-filter
//	           scan-truncated filter-partial filter-scanned filter-read groups-table group-row (data-group) group-count group-last-hour
//	           group-last-day group-reason
//	           group-error-type group-link group-pattern group-frame group-first-seen
//	           group-last-seen group-plan no-dead-letters replay-link
//	messages:  back-to-groups group-summary (data-group) messages-total plan-group messages-table
//	           message-row (data-id) message-link message-reason message-attempts
//	           message-failed-at message-copies message-error
//	message:   message-id message-key message-group-link plan-message failure-summary
//	           failure-reason failure-attempts failure-age failure-error-type failure-error
//	           next-step (data-reason) failure-context failure-source failure-consumer
//	           failure-first-failed-at failure-failed-at failure-copies failure-stack
//	           headers-table header-row header-name header-value header-truncated
//	           body body-kind body-size body-truncated
//	plan:      plan-selection plan-summary plan-selected plan-seen plan-applied-count
//	           plan-not-applied-count plan-not-applied-list plan-applied-list plan-id (data-id)
//	           redrive-form redrive-rate redrive-submit delete-form delete-confirm delete-submit
//	           read-only-note
//	job:       job (data-status, data-progress-url) job-id job-selection job-limit job-rate
//	           job-status job-cancelled-by job-progress job-redriven job-seen job-total
//	           job-skipped job-error job-cancel-form job-cancel
//	jobs:      jobs-table job-row (data-job) job-link job-status job-redriven no-jobs
//	deleted:   delete-result deleted-count delete-outcome
//	audit:     audit-table audit-row (data-action) audit-at audit-actor audit-client audit-session audit-action
//	           audit-selection audit-outcome audit-counts audit-id-count audit-id audit-ids-link no-audit
//	auditrow:  auditrow-summary audit-actor audit-action audit-selection audit-outcome audit-id-count
//	           audit-ids audit-id audit-ids-next no-audit-ids
//	replay:    consumer-name source-name replay-not-applicable replay-redrive-link replay-form replay-to
//	           replay-submit replay-summary replay-covered replay-claimed replay-table
//	           replay-partition (data-partition) replay-partition-covered replay-partition-claimed
//	           replay-members replay-rewind-form replay-confirm replay-rewind-submit replay-reprocess-form
//	           replay-reprocess-confirm replay-reprocess-submit read-only-note replay-how
//	outbox:    outbox-table outbox-row outbox-seq outbox-id outbox-destination
//	           outbox-attempts outbox-reason outbox-more no-outbox-dead
package console
