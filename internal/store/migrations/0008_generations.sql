-- Generations: counters of change that let kurad keep in-memory copies of
-- what its slowest reads recompute, and know exactly when a copy is stale.
-- A reader uses a copy only if it was made at the generation its own
-- snapshot sees, so a copy never mixes states.

-- kb_spaces.gen counts the changes to a space's postings (an entry added
-- or deleted, a key set changed, the space cleared), bumped by the writer
-- in the transaction that makes them (kbcache.go).
ALTER TABLE kb_spaces ADD COLUMN gen INTEGER NOT NULL DEFAULT 0;

-- scopes.gen counts every change to a scope's nodes and relations, which
-- a context compile reads in full (context_cache.go). Triggers, not the
-- writer's code paths, bump it: no way of writing a node can forget to.
ALTER TABLE scopes ADD COLUMN gen INTEGER NOT NULL DEFAULT 0;
CREATE TRIGGER nodes_gen_insert AFTER INSERT ON nodes BEGIN
    UPDATE scopes SET gen = gen + 1 WHERE sid = NEW.sid;
END;
CREATE TRIGGER nodes_gen_update AFTER UPDATE ON nodes BEGIN
    UPDATE scopes SET gen = gen + 1 WHERE sid IN (OLD.sid, NEW.sid);
END;
CREATE TRIGGER nodes_gen_delete AFTER DELETE ON nodes BEGIN
    UPDATE scopes SET gen = gen + 1 WHERE sid = OLD.sid;
END;
CREATE TRIGGER relations_gen_insert AFTER INSERT ON relations BEGIN
    UPDATE scopes SET gen = gen + 1 WHERE sid = NEW.sid;
END;
CREATE TRIGGER relations_gen_update AFTER UPDATE ON relations BEGIN
    UPDATE scopes SET gen = gen + 1 WHERE sid IN (OLD.sid, NEW.sid);
END;
CREATE TRIGGER relations_gen_delete AFTER DELETE ON relations BEGIN
    UPDATE scopes SET gen = gen + 1 WHERE sid = OLD.sid;
END;
