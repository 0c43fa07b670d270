-- Console audit: where each action came from and what it took. client is
-- the browser's address (behind a trusted proxy, the forwarded client);
-- session is a reference to the login session (an HMAC of its ID, never the
-- ID itself), telling apart two sessions of the same user; message_ids are
-- the message IDs a delete or redrive selected (at most 10,000; counts
-- says how many more).
ALTER TABLE {{schema}}.console_audit
    ADD COLUMN client      text   NOT NULL DEFAULT '',
    ADD COLUMN session     text   NOT NULL DEFAULT '',
    ADD COLUMN message_ids text[] NOT NULL DEFAULT '{}';
