-- Console audit: where each action came from. client is the browser's
-- address (behind a trusted proxy, the forwarded client); session is a
-- reference to the login session (an HMAC of its ID, never the ID itself),
-- telling apart two sessions of the same user.
ALTER TABLE {{schema}}.console_audit
    ADD COLUMN client  text NOT NULL DEFAULT '',
    ADD COLUMN session text NOT NULL DEFAULT '';
