-- The tables of linkservice.
CREATE EXTENSION IF NOT EXISTS pgcrypto;

CREATE TABLE users (
    id       bigserial PRIMARY KEY,
    name     text NOT NULL UNIQUE,
    password text NOT NULL
);

CREATE TABLE api_tokens (
    token   text PRIMARY KEY,
    user_id bigint NOT NULL REFERENCES users (id)
);

CREATE TABLE links (
    code  text PRIMARY KEY,
    url   text NOT NULL,
    short text NOT NULL
);
