package sqlitestore

// Test hooks into the group commit.

// SetHooks sets the store's hooks: onQueue runs (under the queue lock)
// when a write is queued behind a commit under way, with the queue's
// length; beforeCommit runs on the leader before each batch, with its
// size. Set them before the first write.
func SetHooks(s *Store, onQueue func(queued int), beforeCommit func(batch int)) {
	s.onQueue, s.beforeCommit = onQueue, beforeCommit
}

// Syncing reports whether the write connection syncs commits now
// (synchronous=FULL). Call it only while no write is under way.
func Syncing(s *Store) bool {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.full
}
