-- Console audit: one row per action taken in `oncely console` (a redrive's
-- start and end, a delete), with who, what and the counts.
CREATE TABLE {{schema}}.console_audit (
    id        bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at        timestamptz NOT NULL DEFAULT now(),
    actor     text        NOT NULL,
    action    text        NOT NULL,
    source    text        NOT NULL,
    consumer  text        NOT NULL,
    selection text        NOT NULL DEFAULT '',
    job       text        NOT NULL DEFAULT '',
    outcome   text        NOT NULL DEFAULT '',
    counts    jsonb       NOT NULL DEFAULT '{}'
);

-- The console lists the latest rows first.
CREATE INDEX console_audit_at_idx ON {{schema}}.console_audit (at);
