-- Outbox rows the broker refused: a refused row counts its attempts, waits
-- until retry_at (holding only its own key) and keeps the broker's reason;
-- after the relay's attempts it moves to outbox_dead, releasing its key.
-- The new columns have constant defaults: adding them rewrites nothing.
ALTER TABLE {{schema}}.outbox
    ADD COLUMN attempts   integer NOT NULL DEFAULT 0,
    ADD COLUMN retry_at   timestamptz,
    ADD COLUMN last_error text;

-- The relay skips the keys of refused rows still waiting; few rows are.
CREATE INDEX outbox_refused_idx ON {{schema}}.outbox (destination, msg_key)
    WHERE published_at IS NULL AND retry_at IS NOT NULL;

-- Rows refused until the relay's attempts ran out, with the broker's reason
-- (seq is the row's number in the outbox). Redrive moves them back.
CREATE TABLE {{schema}}.outbox_dead (
    seq         bigint      PRIMARY KEY,
    message_id  text        NOT NULL,
    destination text        NOT NULL,
    msg_key     text        NOT NULL,
    body        bytea       NOT NULL,
    headers     jsonb       NOT NULL,
    cause       text,
    created_at  timestamptz NOT NULL,
    attempts    integer     NOT NULL,
    reason      text        NOT NULL,
    dead_at     timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX outbox_dead_destination_idx ON {{schema}}.outbox_dead (destination, seq);
