-- index ix_events_goal_archive
CREATE INDEX ix_events_goal_archive ON events (goal_id, stream_version) WHERE kind IN ('goal_archive', 'goal_unarchive');
-- index ix_events_goal_kind
CREATE INDEX ix_events_goal_kind ON events (goal_id, kind);
-- index ix_projection_rows_goal
CREATE INDEX ix_projection_rows_goal ON projection_rows (goal_id);
-- index ix_projection_rows_goal_position
CREATE INDEX ix_projection_rows_goal_position ON projection_rows (goal_id, projection, position, "key");
-- table checkpoints
CREATE TABLE checkpoints (number INTEGER NOT NULL, tree_size INTEGER NOT NULL, root_hash VARCHAR(64) NOT NULL, note TEXT NOT NULL, recorded_at VARCHAR(32) NOT NULL, PRIMARY KEY (number));
-- table events
CREATE TABLE events (position INTEGER NOT NULL, event_id VARCHAR(36) NOT NULL, goal_id VARCHAR(121) NOT NULL, stream_version INTEGER NOT NULL, kind VARCHAR(64) NOT NULL, schema_version VARCHAR(128), payload TEXT NOT NULL, payload_sha256 VARCHAR(64) NOT NULL, source_sha256 VARCHAR(64), prev_hash VARCHAR(64) NOT NULL, chain_hash VARCHAR(64) NOT NULL, recorded_at VARCHAR(32) NOT NULL, source VARCHAR(64) NOT NULL, PRIMARY KEY (position), CONSTRAINT uq_events_goal_version UNIQUE (goal_id, stream_version), UNIQUE (event_id));
-- table merkle_nodes
CREATE TABLE merkle_nodes (level INTEGER NOT NULL, node_index INTEGER NOT NULL, hash VARCHAR(64) NOT NULL, CONSTRAINT pk_merkle_nodes PRIMARY KEY (level, node_index));
-- table projection_counts
CREATE TABLE projection_counts (goal_id VARCHAR(121) NOT NULL, projection VARCHAR(64) NOT NULL, row_count INTEGER NOT NULL, CONSTRAINT pk_projection_counts PRIMARY KEY (goal_id, projection));
-- table projection_rows
CREATE TABLE projection_rows (projection VARCHAR(64) NOT NULL, goal_id VARCHAR(121) NOT NULL, "key" VARCHAR(128) NOT NULL, projection_version INTEGER NOT NULL, status VARCHAR(16) NOT NULL, payload TEXT, error TEXT, position INTEGER NOT NULL, CONSTRAINT pk_projection_rows PRIMARY KEY (projection, goal_id, "key"));
-- table stream_heads
CREATE TABLE stream_heads (goal_id VARCHAR(121) NOT NULL, last_version INTEGER NOT NULL, last_chain_hash VARCHAR(64) NOT NULL, last_position INTEGER NOT NULL, last_recorded_at VARCHAR(32) NOT NULL, PRIMARY KEY (goal_id));
-- trigger events_no_delete
CREATE TRIGGER events_no_delete BEFORE DELETE ON events BEGIN SELECT RAISE(ABORT, 'events are immutable: the ledger is append-only'); END;
-- trigger events_no_replace
CREATE TRIGGER events_no_replace BEFORE INSERT ON events WHEN EXISTS (SELECT 1 FROM events WHERE position = NEW.position) OR EXISTS (SELECT 1 FROM events WHERE event_id = NEW.event_id) OR EXISTS (SELECT 1 FROM events WHERE goal_id = NEW.goal_id AND stream_version = NEW.stream_version) BEGIN SELECT RAISE(ABORT, 'events are immutable: the ledger is append-only'); END;
-- trigger events_no_update
CREATE TRIGGER events_no_update BEFORE UPDATE ON events BEGIN SELECT RAISE(ABORT, 'events are immutable: the ledger is append-only'); END;
