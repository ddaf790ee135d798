-- Schema version 3: the write lock and what an instance catches up with
-- after taking it, in one round trip (store/pg.go: pgLockWrites).
--
-- Every group transaction holds the write lock from here until its commit,
-- and the instances take turns for it: every round trip made while holding
-- it is time no other kurad can commit. Taken from the client, the lock,
-- the newest seq, the log's size, the count of what others committed and
-- their frontier were five statements; here they are one.
--
-- VOLATILE, so each statement after the lock reads with a snapshot taken
-- after it was granted (PostgreSQL gives a volatile function a new snapshot
-- per statement under READ COMMITTED): it sees every transaction that held
-- the lock before, committed.
--
-- Rows: one when the log's size is what the caller knew (k_leaf null),
-- else one for each block of the tree's frontier at the new size: the leaf
-- that completed the block and its row of stored hashes, from which the
-- caller rebuilds the frontier without another statement.
CREATE FUNCTION kura_write_lock(lock_key bigint, known_seq bigint, known_size bigint,
                                with_log boolean, record_type text, ledger_type text)
RETURNS TABLE(k_waited_us bigint, k_seq bigint, k_size bigint,
              k_records bigint, k_ledgers bigint, k_events bigint,
              k_leaf bigint, k_hashes bytea)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    t0 timestamptz := clock_timestamp();
    first bigint := 0;
    lvl int;
BEGIN
    PERFORM pg_advisory_xact_lock(lock_key);
    k_waited_us := floor(extract(epoch FROM clock_timestamp() - t0) * 1000000)::bigint;
    SELECT coalesce(max(e.seq), 0) INTO k_seq FROM events e;
    k_records := 0;
    k_ledgers := 0;
    k_events := 0;
    IF k_seq > known_seq THEN
        SELECT count(*) FILTER (WHERE e.type = record_type),
               count(*) FILTER (WHERE e.type = ledger_type),
               count(*)
          INTO k_records, k_ledgers, k_events
          FROM events e
         WHERE e.seq > known_seq AND e.seq <= k_seq;
    END IF;
    k_size := known_size;
    IF with_log THEN
        SELECT coalesce(max(h.leaf) + 1, 0) INTO k_size FROM log_hashes h;
    END IF;
    IF k_size = known_size THEN
        RETURN NEXT;
        RETURN;
    END IF;
    -- The frontier's blocks are the binary digits of the size, largest
    -- first; a block's hash is stored with the leaf that completed it.
    FOR lvl IN REVERSE 62..0 LOOP
        IF ((k_size >> lvl) & 1) = 1 THEN
            k_leaf := first + (1::bigint << lvl) - 1;
            SELECT h.hashes INTO k_hashes FROM log_hashes h WHERE h.leaf = k_leaf;
            RETURN NEXT;
            first := first + (1::bigint << lvl);
        END IF;
    END LOOP;
END
$$;
