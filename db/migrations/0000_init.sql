CREATE TABLE "access_tokens" (
	"id" serial PRIMARY KEY NOT NULL,
	"user_id" integer NOT NULL,
	"application_id" integer,
	"token_hash" text NOT NULL,
	"expires_at" timestamp with time zone,
	"revoked_at" timestamp with time zone,
	"last_used_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "access_tokens_tokenHash_unique" UNIQUE("token_hash")
);
--> statement-breakpoint
CREATE TABLE "oauth_applications" (
	"id" serial PRIMARY KEY NOT NULL,
	"owner_id" integer NOT NULL,
	"name" text NOT NULL,
	"uid" text NOT NULL,
	"secret_hash" text NOT NULL,
	"redirect_uri" text,
	"scopes" text DEFAULT '' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "oauth_applications_uid_unique" UNIQUE("uid")
);
--> statement-breakpoint
CREATE TABLE "password_resets" (
	"id" serial PRIMARY KEY NOT NULL,
	"user_id" integer NOT NULL,
	"token_hash" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "password_resets_tokenHash_unique" UNIQUE("token_hash")
);
--> statement-breakpoint
CREATE TABLE "users" (
	"id" serial PRIMARY KEY NOT NULL,
	"uuid" uuid DEFAULT gen_random_uuid() NOT NULL,
	"username" text NOT NULL,
	"email" text NOT NULL,
	"password_hash" text,
	"role" text DEFAULT 'citizen' NOT NULL,
	"first_name" text,
	"last_name" text,
	"url" text,
	"city" text,
	"country_code" text,
	"profile_picture" text,
	"forwarding_token" text,
	"forwarding_username" text,
	"legacy_api_key" text,
	"archived_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "users_uuid_unique" UNIQUE("uuid"),
	CONSTRAINT "users_forwardingToken_unique" UNIQUE("forwarding_token"),
	CONSTRAINT "users_forwardingUsername_unique" UNIQUE("forwarding_username"),
	CONSTRAINT "users_legacyApiKey_unique" UNIQUE("legacy_api_key"),
	CONSTRAINT "users_role_check" CHECK ("users"."role" in ('citizen', 'researcher', 'admin'))
);
--> statement-breakpoint
CREATE TABLE "kit_sensors" (
	"kit_id" integer NOT NULL,
	"sensor_id" integer NOT NULL,
	"key" text NOT NULL,
	"position" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "kit_sensors_kit_id_sensor_id_pk" PRIMARY KEY("kit_id","sensor_id")
);
--> statement-breakpoint
CREATE TABLE "kits" (
	"id" serial PRIMARY KEY NOT NULL,
	"uuid" uuid DEFAULT gen_random_uuid() NOT NULL,
	"slug" text NOT NULL,
	"name" text NOT NULL,
	"description" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "kits_uuid_unique" UNIQUE("uuid")
);
--> statement-breakpoint
CREATE TABLE "measurements" (
	"id" serial PRIMARY KEY NOT NULL,
	"uuid" uuid DEFAULT gen_random_uuid() NOT NULL,
	"name" text NOT NULL,
	"description" text,
	"definition" text,
	"unit" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "measurements_uuid_unique" UNIQUE("uuid"),
	CONSTRAINT "measurements_name_unique" UNIQUE("name")
);
--> statement-breakpoint
CREATE TABLE "sensor_tags" (
	"sensor_id" integer NOT NULL,
	"tag_sensor_id" integer NOT NULL,
	CONSTRAINT "sensor_tags_sensor_id_tag_sensor_id_pk" PRIMARY KEY("sensor_id","tag_sensor_id")
);
--> statement-breakpoint
CREATE TABLE "sensors" (
	"id" serial PRIMARY KEY NOT NULL,
	"uuid" uuid DEFAULT gen_random_uuid() NOT NULL,
	"parent_id" integer,
	"name" text NOT NULL,
	"description" text,
	"unit" text,
	"datasheet" text,
	"unit_definition" text,
	"measurement_id" integer,
	"default_key" text,
	"equation" text,
	"reverse_equation" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "sensors_uuid_unique" UNIQUE("uuid")
);
--> statement-breakpoint
CREATE TABLE "tag_sensors" (
	"id" serial PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"description" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "tag_sensors_name_unique" UNIQUE("name")
);
--> statement-breakpoint
CREATE TABLE "tags" (
	"id" serial PRIMARY KEY NOT NULL,
	"uuid" uuid DEFAULT gen_random_uuid() NOT NULL,
	"name" text NOT NULL,
	"description" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "tags_uuid_unique" UNIQUE("uuid")
);
--> statement-breakpoint
CREATE TABLE "components" (
	"id" serial PRIMARY KEY NOT NULL,
	"uuid" uuid DEFAULT gen_random_uuid() NOT NULL,
	"device_id" integer NOT NULL,
	"sensor_id" integer NOT NULL,
	"key" text,
	"equation" text,
	"last_reading_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "components_uuid_unique" UNIQUE("uuid")
);
--> statement-breakpoint
CREATE TABLE "device_inventories" (
	"id" serial PRIMARY KEY NOT NULL,
	"report" jsonb,
	"raw_payload" text NOT NULL,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "device_tags" (
	"device_id" integer NOT NULL,
	"tag_id" integer NOT NULL,
	CONSTRAINT "device_tags_device_id_tag_id_pk" PRIMARY KEY("device_id","tag_id")
);
--> statement-breakpoint
CREATE TABLE "devices" (
	"id" serial PRIMARY KEY NOT NULL,
	"uuid" uuid DEFAULT gen_random_uuid() NOT NULL,
	"owner_id" integer NOT NULL,
	"kit_id" integer,
	"name" text NOT NULL,
	"description" text,
	"state" text DEFAULT 'not_configured' NOT NULL,
	"archived_at" timestamp with time zone,
	"device_token" text,
	"mac_address" "macaddr",
	"old_mac_address" "macaddr",
	"exposure" text,
	"latitude" double precision,
	"longitude" double precision,
	"elevation" integer,
	"geohash" text,
	"city" text,
	"country_code" text,
	"is_private" boolean DEFAULT false NOT NULL,
	"enable_forwarding" boolean DEFAULT false NOT NULL,
	"precise_location" boolean DEFAULT true NOT NULL,
	"is_test" boolean DEFAULT false NOT NULL,
	"notify_stopped_publishing" boolean DEFAULT false NOT NULL,
	"notify_low_battery" boolean DEFAULT false NOT NULL,
	"stopped_publishing_notified_at" timestamp with time zone,
	"low_battery_notified_at" timestamp with time zone,
	"hardware_name_override" text,
	"hardware_type_override" text,
	"hardware_version_override" text,
	"hardware_slug_override" text,
	"last_status_message" jsonb,
	"last_status_at" timestamp with time zone,
	"last_seen_at" timestamp with time zone,
	"last_reading_at" timestamp with time zone,
	"csv_archive_requested_at" timestamp with time zone,
	"meta" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "devices_uuid_unique" UNIQUE("uuid"),
	CONSTRAINT "devices_state_check" CHECK ("devices"."state" in ('not_configured', 'never_published', 'has_published', 'archived')),
	CONSTRAINT "devices_exposure_check" CHECK ("devices"."exposure" is null or "devices"."exposure" in ('indoor', 'outdoor')),
	CONSTRAINT "devices_latitude_check" CHECK ("devices"."latitude" is null or "devices"."latitude" between -90 and 90),
	CONSTRAINT "devices_longitude_check" CHECK ("devices"."longitude" is null or "devices"."longitude" between -180 and 180)
);
--> statement-breakpoint
CREATE TABLE "postprocessings" (
	"id" serial PRIMARY KEY NOT NULL,
	"device_id" integer NOT NULL,
	"blueprint_url" text,
	"hardware_url" text,
	"forwarding_params" text,
	"meta" text,
	"latest_postprocessing" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "postprocessings_deviceId_unique" UNIQUE("device_id")
);
--> statement-breakpoint
CREATE TABLE "experiment_devices" (
	"experiment_id" integer NOT NULL,
	"device_id" integer NOT NULL,
	CONSTRAINT "experiment_devices_experiment_id_device_id_pk" PRIMARY KEY("experiment_id","device_id")
);
--> statement-breakpoint
CREATE TABLE "experiments" (
	"id" serial PRIMARY KEY NOT NULL,
	"owner_id" integer NOT NULL,
	"name" text NOT NULL,
	"description" text,
	"is_test" boolean DEFAULT false NOT NULL,
	"starts_at" timestamp with time zone,
	"ends_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "latest_readings" (
	"device_id" integer NOT NULL,
	"sensor_id" integer NOT NULL,
	"recorded_at" timestamp with time zone NOT NULL,
	"value" double precision,
	"raw_value" double precision,
	"prev_recorded_at" timestamp with time zone,
	"prev_value" double precision,
	"prev_raw_value" double precision,
	"added_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "latest_readings_device_id_sensor_id_pk" PRIMARY KEY("device_id","sensor_id")
);
--> statement-breakpoint
CREATE TABLE "readings" (
	"device_id" integer NOT NULL,
	"sensor_id" integer NOT NULL,
	"recorded_at" timestamp with time zone NOT NULL,
	"value" double precision,
	"raw_value" double precision,
	"added_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "readings_device_id_sensor_id_recorded_at_pk" PRIMARY KEY("device_id","sensor_id","recorded_at")
);
--> statement-breakpoint
ALTER TABLE "access_tokens" ADD CONSTRAINT "access_tokens_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "access_tokens" ADD CONSTRAINT "access_tokens_application_id_oauth_applications_id_fk" FOREIGN KEY ("application_id") REFERENCES "public"."oauth_applications"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "oauth_applications" ADD CONSTRAINT "oauth_applications_owner_id_users_id_fk" FOREIGN KEY ("owner_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "password_resets" ADD CONSTRAINT "password_resets_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "kit_sensors" ADD CONSTRAINT "kit_sensors_kit_id_kits_id_fk" FOREIGN KEY ("kit_id") REFERENCES "public"."kits"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "kit_sensors" ADD CONSTRAINT "kit_sensors_sensor_id_sensors_id_fk" FOREIGN KEY ("sensor_id") REFERENCES "public"."sensors"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sensor_tags" ADD CONSTRAINT "sensor_tags_sensor_id_sensors_id_fk" FOREIGN KEY ("sensor_id") REFERENCES "public"."sensors"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sensor_tags" ADD CONSTRAINT "sensor_tags_tag_sensor_id_tag_sensors_id_fk" FOREIGN KEY ("tag_sensor_id") REFERENCES "public"."tag_sensors"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sensors" ADD CONSTRAINT "sensors_parent_id_sensors_id_fk" FOREIGN KEY ("parent_id") REFERENCES "public"."sensors"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sensors" ADD CONSTRAINT "sensors_measurement_id_measurements_id_fk" FOREIGN KEY ("measurement_id") REFERENCES "public"."measurements"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "components" ADD CONSTRAINT "components_device_id_devices_id_fk" FOREIGN KEY ("device_id") REFERENCES "public"."devices"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "components" ADD CONSTRAINT "components_sensor_id_sensors_id_fk" FOREIGN KEY ("sensor_id") REFERENCES "public"."sensors"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "device_tags" ADD CONSTRAINT "device_tags_device_id_devices_id_fk" FOREIGN KEY ("device_id") REFERENCES "public"."devices"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "device_tags" ADD CONSTRAINT "device_tags_tag_id_tags_id_fk" FOREIGN KEY ("tag_id") REFERENCES "public"."tags"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "devices" ADD CONSTRAINT "devices_owner_id_users_id_fk" FOREIGN KEY ("owner_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "devices" ADD CONSTRAINT "devices_kit_id_kits_id_fk" FOREIGN KEY ("kit_id") REFERENCES "public"."kits"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "postprocessings" ADD CONSTRAINT "postprocessings_device_id_devices_id_fk" FOREIGN KEY ("device_id") REFERENCES "public"."devices"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "experiment_devices" ADD CONSTRAINT "experiment_devices_experiment_id_experiments_id_fk" FOREIGN KEY ("experiment_id") REFERENCES "public"."experiments"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "experiment_devices" ADD CONSTRAINT "experiment_devices_device_id_devices_id_fk" FOREIGN KEY ("device_id") REFERENCES "public"."devices"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "experiments" ADD CONSTRAINT "experiments_owner_id_users_id_fk" FOREIGN KEY ("owner_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "latest_readings" ADD CONSTRAINT "latest_readings_device_id_devices_id_fk" FOREIGN KEY ("device_id") REFERENCES "public"."devices"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "latest_readings" ADD CONSTRAINT "latest_readings_sensor_id_sensors_id_fk" FOREIGN KEY ("sensor_id") REFERENCES "public"."sensors"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "access_tokens_user_idx" ON "access_tokens" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "password_resets_user_idx" ON "password_resets" USING btree ("user_id");--> statement-breakpoint
CREATE UNIQUE INDEX "users_username_lower_key" ON "users" USING btree (lower("username"));--> statement-breakpoint
CREATE UNIQUE INDEX "users_email_lower_key" ON "users" USING btree (lower("email"));--> statement-breakpoint
CREATE UNIQUE INDEX "kit_sensors_key_key" ON "kit_sensors" USING btree ("kit_id","key");--> statement-breakpoint
CREATE INDEX "kits_slug_idx" ON "kits" USING btree ("slug");--> statement-breakpoint
CREATE INDEX "sensors_parent_idx" ON "sensors" USING btree ("parent_id");--> statement-breakpoint
CREATE INDEX "sensors_measurement_idx" ON "sensors" USING btree ("measurement_id");--> statement-breakpoint
CREATE UNIQUE INDEX "tags_name_lower_key" ON "tags" USING btree (lower("name"));--> statement-breakpoint
CREATE UNIQUE INDEX "components_device_sensor_key" ON "components" USING btree ("device_id","sensor_id");--> statement-breakpoint
CREATE INDEX "device_tags_tag_idx" ON "device_tags" USING btree ("tag_id");--> statement-breakpoint
CREATE INDEX "devices_owner_idx" ON "devices" USING btree ("owner_id");--> statement-breakpoint
CREATE UNIQUE INDEX "devices_device_token_key" ON "devices" USING btree ("device_token");--> statement-breakpoint
CREATE INDEX "devices_mac_address_idx" ON "devices" USING btree ("mac_address");--> statement-breakpoint
CREATE INDEX "devices_geohash_idx" ON "devices" USING btree ("geohash");--> statement-breakpoint
CREATE INDEX "devices_last_reading_idx" ON "devices" USING btree ("last_reading_at");--> statement-breakpoint
CREATE INDEX "experiment_devices_device_idx" ON "experiment_devices" USING btree ("device_id");--> statement-breakpoint
CREATE INDEX "experiments_owner_idx" ON "experiments" USING btree ("owner_id");