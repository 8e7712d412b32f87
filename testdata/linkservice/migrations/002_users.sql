-- The user the scenario logs in as.
INSERT INTO users (name, password) VALUES ('ci', crypt('ci-secret', gen_salt('bf', 4)));
