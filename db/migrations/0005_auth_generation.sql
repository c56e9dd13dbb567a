CREATE TABLE "auth_generation" (
	"id" integer PRIMARY KEY DEFAULT 1 NOT NULL,
	"value" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "auth_generation_one_row" CHECK ("auth_generation"."id" = 1)
);
--> statement-breakpoint
INSERT INTO "auth_generation" ("id", "value") VALUES (1, 0) ON CONFLICT DO NOTHING;
