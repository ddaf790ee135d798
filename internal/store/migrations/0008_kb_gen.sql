-- gen counts the changes to a space's postings (an entry added or deleted,
-- a key set changed, the space cleared), in the transaction that makes
-- them. A reader that sees gen g in its snapshot knows which in-memory
-- copies of postings are current for it (kbcache.go): a copy made under
-- the same g holds exactly the rows its snapshot holds.
ALTER TABLE kb_spaces ADD COLUMN gen INTEGER NOT NULL DEFAULT 0;
