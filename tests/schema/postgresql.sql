-- column checkpoints.note
text NOT NULL;
-- column checkpoints.number
integer NOT NULL;
-- column checkpoints.recorded_at
character varying(32) NOT NULL;
-- column checkpoints.root_hash
character varying(64) NOT NULL;
-- column checkpoints.tree_size
bigint NOT NULL;
-- column events.chain_hash
character varying(64) NOT NULL;
-- column events.event_id
character varying(36) NOT NULL;
-- column events.goal_id
character varying(121) NOT NULL;
-- column events.kind
character varying(64) NOT NULL;
-- column events.payload
text NOT NULL;
-- column events.payload_sha256
character varying(64) NOT NULL;
-- column events.position
bigint NOT NULL;
-- column events.prev_hash
character varying(64) NOT NULL;
-- column events.recorded_at
character varying(32) NOT NULL;
-- column events.schema_version
character varying(128);
-- column events.source
character varying(64) NOT NULL;
-- column events.source_sha256
character varying(64);
-- column events.stream_version
integer NOT NULL;
-- column merkle_nodes.hash
character varying(64) NOT NULL;
-- column merkle_nodes.level
integer NOT NULL;
-- column merkle_nodes.node_index
bigint NOT NULL;
-- column projection_counts.goal_id
character varying(121) NOT NULL;
-- column projection_counts.projection
character varying(64) NOT NULL;
-- column projection_counts.row_count
integer NOT NULL;
-- column projection_rows.error
text;
-- column projection_rows.goal_id
character varying(121) NOT NULL;
-- column projection_rows.key
character varying(128) NOT NULL;
-- column projection_rows.payload
text;
-- column projection_rows.position
bigint NOT NULL;
-- column projection_rows.projection
character varying(64) NOT NULL;
-- column projection_rows.projection_version
integer NOT NULL;
-- column projection_rows.status
character varying(16) NOT NULL;
-- column stream_heads.goal_id
character varying(121) NOT NULL;
-- column stream_heads.last_chain_hash
character varying(64) NOT NULL;
-- column stream_heads.last_position
bigint NOT NULL;
-- column stream_heads.last_recorded_at
character varying(32) NOT NULL;
-- column stream_heads.last_version
integer NOT NULL;
-- constraint checkpoints.checkpoints_pkey
PRIMARY KEY (number);
-- constraint events.events_event_id_key
UNIQUE (event_id);
-- constraint events.events_pkey
PRIMARY KEY ("position");
-- constraint events.uq_events_goal_version
UNIQUE (goal_id, stream_version);
-- constraint merkle_nodes.pk_merkle_nodes
PRIMARY KEY (level, node_index);
-- constraint projection_counts.pk_projection_counts
PRIMARY KEY (goal_id, projection);
-- constraint projection_rows.pk_projection_rows
PRIMARY KEY (projection, goal_id, key);
-- constraint stream_heads.stream_heads_pkey
PRIMARY KEY (goal_id);
-- index checkpoints.checkpoints_pkey
CREATE UNIQUE INDEX checkpoints_pkey ON checkpoints USING btree (number);
-- index events.events_event_id_key
CREATE UNIQUE INDEX events_event_id_key ON events USING btree (event_id);
-- index events.events_pkey
CREATE UNIQUE INDEX events_pkey ON events USING btree ("position");
-- index events.ix_events_goal_archive
CREATE INDEX ix_events_goal_archive ON events USING btree (goal_id, stream_version) WHERE ((kind)::text = ANY ((ARRAY['goal_archive'::character varying, 'goal_unarchive'::character varying])::text[]));
-- index events.ix_events_goal_kind
CREATE INDEX ix_events_goal_kind ON events USING btree (goal_id, kind);
-- index events.uq_events_goal_version
CREATE UNIQUE INDEX uq_events_goal_version ON events USING btree (goal_id, stream_version);
-- index merkle_nodes.pk_merkle_nodes
CREATE UNIQUE INDEX pk_merkle_nodes ON merkle_nodes USING btree (level, node_index);
-- index projection_counts.pk_projection_counts
CREATE UNIQUE INDEX pk_projection_counts ON projection_counts USING btree (goal_id, projection);
-- index projection_rows.ix_projection_rows_goal
CREATE INDEX ix_projection_rows_goal ON projection_rows USING btree (goal_id);
-- index projection_rows.ix_projection_rows_goal_position
CREATE INDEX ix_projection_rows_goal_position ON projection_rows USING btree (goal_id, projection, "position", key);
-- index projection_rows.pk_projection_rows
CREATE UNIQUE INDEX pk_projection_rows ON projection_rows USING btree (projection, goal_id, key);
-- index stream_heads.stream_heads_pkey
CREATE UNIQUE INDEX stream_heads_pkey ON stream_heads USING btree (goal_id);
-- trigger events.events_no_truncate
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events FOR EACH STATEMENT EXECUTE FUNCTION benchledger_events_immutable();
-- trigger events.events_no_update_delete
CREATE TRIGGER events_no_update_delete BEFORE DELETE OR UPDATE ON events FOR EACH ROW EXECUTE FUNCTION benchledger_events_immutable();
-- function benchledger_events_immutable
CREATE OR REPLACE FUNCTION benchledger_events_immutable() RETURNS trigger LANGUAGE plpgsql AS $function$ BEGIN RAISE EXCEPTION 'events are immutable: the ledger is append-only' USING ERRCODE = 'restrict_violation'; END $function$;
