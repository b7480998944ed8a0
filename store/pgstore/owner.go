package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aibuddy/aibuddy/store"
)

// Owners. Every open Store is an owner: a random id in 1..2^31-1, written
// into each record it puts, and a session-level advisory lock
// (ownerClass, id) that it holds on a connection of its own for as long as
// it is open. PostgreSQL drops a session's advisory locks when the session
// ends, and the session ends when its client goes however it goes: a
// SIGKILLed process's socket is closed by its kernel, so the backend sees
// EOF at once; a machine that vanishes is noticed by TCP keepalive (set
// keepalives_idle in the URL, or the server's tcp_keepalives_idle, to
// bound it). So an owner is alive exactly while its lock shows in
// pg_locks, which every session of the database can read: no table of
// heartbeats, no clocks compared across machines. A connection pooler in
// transaction mode (pgbouncer pool_mode=transaction) breaks session locks:
// connect the store directly or in session mode.

// ownerTries bounds the draws of an owner id whose lock is already held
// (two live stores drawing one id).
const ownerTries = 8

// takeOwnership opens the lock connection and takes the owner lock of a
// fresh id.
func (s *Store) takeOwnership(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, s.lockCfg)
	if err != nil {
		return err
	}
	for range ownerTries {
		id := newOwnerID()
		var ok bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, ownerClass, id).Scan(&ok); err != nil {
			conn.Close(context.WithoutCancel(ctx))
			return err
		}
		if ok {
			s.lockMu.Lock()
			s.owner, s.lockConn = strconv.FormatInt(int64(id), 10), conn
			s.lockMu.Unlock()
			return nil
		}
	}
	conn.Close(context.WithoutCancel(ctx))
	return errors.New("no free owner id after several draws")
}

func newOwnerID() int32 {
	var b [4]byte
	for {
		_, _ = rand.Read(b[:])
		if id := int32(binary.BigEndian.Uint32(b[:]) & 0x7fffffff); id != 0 {
			return id
		}
	}
}

// keepOwnership checks the lock connection and, when it was lost (the
// server restarted, the network dropped it), reconnects and takes the
// same owner lock again. Between the loss and the retake another store
// may have marked this owner's running records interrupted; a later Put of
// such a call's end replaces the mark.
func (s *Store) keepOwnership(ctx context.Context) error {
	s.lockMu.Lock()
	defer s.lockMu.Unlock()
	if s.lockConn != nil && s.lockConn.Ping(ctx) == nil {
		return nil
	}
	if s.lockConn != nil {
		s.lockConn.Close(ctx)
		s.lockConn = nil
	}
	id, _ := strconv.ParseInt(s.owner, 10, 32)
	conn, err := pgx.ConnectConfig(ctx, s.lockCfg)
	if err != nil {
		return err
	}
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, ownerClass, int32(id)).Scan(&ok); err != nil || !ok {
		conn.Close(ctx)
		return fmt.Errorf("retake owner lock %s: held %v, %v", s.owner, !ok, err)
	}
	s.lockConn = conn
	return nil
}

// releaseOwnership ends the lock connection, which releases the lock.
func (s *Store) releaseOwnership() error {
	s.lockMu.Lock()
	defer s.lockMu.Unlock()
	if s.lockConn == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Unlock first: the server drops a closed session's locks only once
	// its backend has exited, after Close has returned.
	_, uerr := s.lockConn.Exec(ctx, `SELECT pg_advisory_unlock_all()`)
	err := errors.Join(uerr, s.lockConn.Close(ctx))
	s.lockConn = nil
	return err
}

// Owner implements [store.Owners]: this store's owner id, as written into
// the records it puts.
func (s *Store) Owner() string { return s.owner }

// MarkInterrupted marks every record still running whose owner holds no
// owner lock (its store was closed, or its process ended) as
// [store.OutcomeInterrupted] at the store's clock, in one statement, and
// returns nil or an error naming the stage. Open calls it, and so does
// the sweeper every Options.SweepInterval; records of live owners, in
// this process or any other, are left alone.
func (s *Store) MarkInterrupted(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, `
UPDATE calls SET outcome = $1, interrupted_at = $2
WHERE outcome = 'running' AND owner <> $3 AND owner NOT IN (
  SELECT l.objid::text FROM pg_locks l
  WHERE l.locktype = 'advisory' AND l.classid = $4::oid AND l.objsubid = 2 AND l.granted
    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()))`,
		string(store.OutcomeInterrupted), s.now().UnixNano(), s.owner, int64(ownerClass))
	if err != nil {
		return s.fail("mark interrupted calls", err)
	}
	return nil
}

// sweeper keeps the owner lock and marks the records of gone owners, every
// interval, until Close.
func (s *Store) sweeper(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), interval)
		if s.keepOwnership(ctx) == nil {
			_ = s.MarkInterrupted(ctx)
		}
		cancel()
	}
}

// WaitOwnerGone waits until owner holds no owner lock: its store was
// closed, or the server ended the session of its process. When a process
// is killed, the server notices its session ended and drops the lock a
// moment later, so a record of that owner can still look alive right
// after the kill. It blocks on the lock itself (pg_advisory_lock) until
// ctx ends, then returns ctx's error; other errors name the stage.
func (s *Store) WaitOwnerGone(ctx context.Context, owner string) error {
	id, err := strconv.ParseInt(owner, 10, 32)
	if err != nil {
		return fmt.Errorf("pgstore: owner %q is not an owner id", owner)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return s.fail("wait for owner "+owner, err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1, $2)`, ownerClass, int32(id)); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return s.fail("wait for owner "+owner, err)
	}
	if _, err := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1, $2)`, ownerClass, int32(id)); err != nil {
		return s.fail("wait for owner "+owner, err)
	}
	return nil
}

var _ store.Owners = (*Store)(nil)

// OwnerAlive implements [store.Owners]: whether the owner's advisory lock
// is held in this database (pg_locks).
func (s *Store) OwnerAlive(ctx context.Context, owner string) (bool, error) {
	if owner == s.owner {
		return true, nil
	}
	var alive bool
	err := s.pool.QueryRow(ctx, `
SELECT EXISTS (SELECT 1 FROM pg_locks l
  WHERE l.locktype = 'advisory' AND l.classid = $1::oid AND l.objsubid = 2 AND l.granted AND l.objid::text = $2
    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()))`, int64(ownerClass), owner).Scan(&alive)
	if err != nil {
		return false, s.fail("owner alive "+owner, err)
	}
	return alive, nil
}
