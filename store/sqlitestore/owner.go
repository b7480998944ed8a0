package sqlitestore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aibuddy/aibuddy/store"
)

// Owners. Every Store instance has an owner id, written into each record
// it puts, and holds an exclusive lock on its own lock file,
// <database>-owners/<owner>.lock, for as long as it is open. The kernel
// drops the lock when the process ends however it ends (SIGKILL included),
// so at Open a record still "running" whose owner's lock can be taken (or
// whose lock file is gone) was left by a writer that is gone: it is marked
// "interrupted". Records of a live owner (another process, or another
// instance in this one) are left alone.

// ownersDir is the folder of the lock files beside the database.
func ownersDir(dbPath string) string { return dbPath + "-owners" }

func lockPath(dbPath, owner string) string {
	return filepath.Join(ownersDir(dbPath), owner+".lock")
}

func newOwner() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// takeOwnership creates and locks this instance's lock file. The file is
// locked under a temporary name and then renamed into place, so a lock
// file under its final name is always locked by its owner while it lives.
func (s *Store) takeOwnership() error {
	dir := ownersDir(s.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+s.owner+".tmp")
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := lockFile(f); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, lockPath(s.path, s.owner)); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	s.lock = f
	return nil
}

// releaseOwnership removes and unlocks the lock file (Close).
func (s *Store) releaseOwnership() error {
	if s.lock == nil {
		return nil
	}
	err := os.Remove(lockPath(s.path, s.owner))
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	return errors.Join(err, s.lock.Close())
}

// ownerGone reports whether the writer owner has ended: its lock file is
// missing, or its lock can be taken (then the file is removed). An owner
// whose state cannot be read is taken as alive.
func (s *Store) ownerGone(owner string) bool {
	if owner == "" {
		return true // written before owners were recorded (schema 1)
	}
	if owner == s.owner || strings.ContainsAny(owner, `/\.`) {
		return false
	}
	p := lockPath(s.path, owner)
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	defer f.Close()
	held, err := tryLock(f)
	if err != nil || !held {
		return false
	}
	os.Remove(p)
	return true
}

// markInterrupted marks the running records of writers that are gone as
// interrupted at now, and removes the lock files those writers left.
func (s *Store) markInterrupted(ctx context.Context, now time.Time) error {
	if !canLock {
		return nil // no owner locks on this system: never guess
	}
	err := s.write(ctx, false, func(ctx context.Context) error {
		rows, err := s.conn.QueryContext(ctx, `SELECT DISTINCT owner FROM calls WHERE outcome = 'running'`)
		if err != nil {
			return err
		}
		var owners []string
		for rows.Next() {
			var o string
			if err := rows.Scan(&o); err != nil {
				rows.Close()
				return err
			}
			owners = append(owners, o)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, o := range owners {
			if !s.ownerGone(o) {
				continue
			}
			if _, err := s.conn.ExecContext(ctx, `UPDATE calls SET outcome = ?, interrupted_at = ? WHERE outcome = 'running' AND owner = ?`,
				string(store.OutcomeInterrupted), now.UnixNano(), o); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("mark interrupted calls: %w", err)
	}
	// Lock files of writers that ended with no record running.
	entries, _ := os.ReadDir(ownersDir(s.path))
	for _, e := range entries {
		if o, ok := strings.CutSuffix(e.Name(), ".lock"); ok && o != s.owner {
			s.ownerGone(o)
		}
	}
	return nil
}

var _ store.Owners = (*Store)(nil)

// Owner implements [store.Owners]: this instance's owner id.
func (s *Store) Owner() string { return s.owner }

// OwnerAlive implements [store.Owners] with the owner's lock file: alive
// while another open file description holds its flock. On systems without
// flock every owner counts as alive.
func (s *Store) OwnerAlive(ctx context.Context, owner string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if !canLock {
		return true, nil
	}
	if owner == "" {
		return false, nil
	}
	return !s.ownerGone(owner), nil
}
