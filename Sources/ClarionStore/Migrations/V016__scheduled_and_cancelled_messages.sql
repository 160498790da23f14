-- 16: scheduled and cancelled messages
--
-- Scheduled sends and cancel (issue 18, docs/architecture.md "Scheduled and cancelled messages").
--
-- A publish with `send_at` in the future is stored with state `Scheduled` and its time in `send_at`. It waits in
-- PostgreSQL, not in a node: any dispatcher's claim loop moves the due ones to `Enqueued` (`FOR UPDATE SKIP
-- LOCKED`, through `messages_scheduled_idx`), and from there they go the way of every publish. A restart loses
-- nothing, and a node that is down only means another node promotes them.
--
-- The two queues of unplanned messages now also require `state = 'Enqueued'`, so a scheduled message (unplanned
-- until it is due) is not in them and the planner and the direct claim never scan past the scheduled backlog.
-- Before this version every unplanned message was Enqueued, so the rebuilt indexes hold the same rows.
--
-- `Cancelled` is a final state, set by `POST /v1/messages/{id}/cancel` (or `clarion messages cancel`) on a
-- scheduled, enqueued or processing message: its open shards are marked done in the same transaction (a shard still
-- leased keeps its `lease_owner` and fencing token so its holder's next checkpoint adds the counts it has and stops)
-- and its pending retries are deleted. `completed_at` is when it was cancelled.

ALTER TABLE messages ADD COLUMN send_at timestamptz;
ALTER TABLE messages DROP CONSTRAINT messages_state_check;
ALTER TABLE messages ADD CONSTRAINT messages_state_check
    CHECK (state IN ('Scheduled', 'Enqueued', 'Processing', 'Completed', 'Failed', 'Expired', 'Cancelled'));
ALTER TABLE messages ADD CONSTRAINT messages_scheduled_send_at CHECK (state <> 'Scheduled' OR send_at IS NOT NULL);

DROP INDEX messages_unplanned_idx;
DROP INDEX messages_direct_unclaimed_idx;
CREATE INDEX messages_unplanned_idx ON messages (id) WHERE NOT planned AND state = 'Enqueued' AND target_kind <> 'endpoint';
CREATE INDEX messages_direct_unclaimed_idx ON messages (id) WHERE NOT planned AND state = 'Enqueued' AND target_kind = 'endpoint';
CREATE INDEX messages_scheduled_idx ON messages (send_at) WHERE state = 'Scheduled';

-- Pacing (`"pace"` on a topic or audience publish): the fan-out is spread at `pace_per_second`, or over
-- `pace_over_seconds` (the rate is then the planned targets over that window). The budget is one for all nodes, kept
-- on the message row: `pace_started_at` is when the first send was granted, `pace_granted` how many sends were granted
-- since; a shard worker takes its share under the row lock (`FanOutJobs.takePaceBudget`), never more than
-- `rate * elapsed + burst` in total.
ALTER TABLE messages ADD COLUMN pace_per_second double precision CHECK (pace_per_second > 0);
ALTER TABLE messages ADD COLUMN pace_over_seconds integer CHECK (pace_over_seconds > 0);
ALTER TABLE messages ADD COLUMN pace_started_at timestamptz;
ALTER TABLE messages ADD COLUMN pace_granted bigint NOT NULL DEFAULT 0;
