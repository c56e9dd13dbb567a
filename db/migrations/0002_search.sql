-- Search (issue 4): full-text with prefix matching over devices and users, accent-insensitive.
-- Accents are folded with translate() rather than the unaccent extension, so that the folding is
-- immutable (usable in an index) and needs no extension on any PostgreSQL, PGlite included.
CREATE OR REPLACE FUNCTION esp_fold(value text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT translate(lower(coalesce(value, '')), 'áàâäãåāăąçćčďéèêëēėęěğíìîïīįıłñńňóòôöõøōőřśšşťúùûüūůűųýÿžźż', 'aaaaaaaaacccdeeeeeeeegiiiiiiilnnnoooooooorssstuuuuuuuuyyzzz')
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION esp_search_document(a text, b text, c text) RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT to_tsvector('simple'::regconfig, public.esp_fold(a) || ' ' || public.esp_fold(b) || ' ' || public.esp_fold(c))
$$;
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS devices_search_idx ON devices USING gin (esp_search_document(name, description, city));
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS users_search_idx ON users USING gin (esp_search_document(username, city, NULL));
