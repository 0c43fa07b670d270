-- Outbox: messages a handler sends in its own transaction; a relay
-- (package outbox) publishes committed rows and marks them published.
CREATE TABLE {{schema}}.outbox (
    seq          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    message_id   text        NOT NULL,
    destination  text        NOT NULL,
    msg_key      text        NOT NULL DEFAULT '',
    body         bytea       NOT NULL,
    headers      jsonb       NOT NULL DEFAULT '{}',
    cause        text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    published_at timestamptz
);

-- The relay selects unpublished rows in seq order.
CREATE INDEX outbox_unpublished_idx ON {{schema}}.outbox (seq) WHERE published_at IS NULL;

-- Send numbers the messages one incoming message causes.
CREATE INDEX outbox_cause_idx ON {{schema}}.outbox (cause) WHERE cause IS NOT NULL;

-- Cleanup deletes published rows by age.
CREATE INDEX outbox_published_at_idx ON {{schema}}.outbox (published_at) WHERE published_at IS NOT NULL;
