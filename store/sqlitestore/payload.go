package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"

	"github.com/aibuddy/aibuddy/store"
)

// Payloads live in the database, beside the records, rather than as files
// in the data folder: a payload then commits in the same WAL, with the
// same durability setting and the same group commit as the records; a
// prune deletes a task's records, payloads and jobs in one transaction; two
// processes on one file see one consistent state; and there is no second
// atomic-file scheme (temporary file, fsync, rename, fsync of the folder)
// to keep right. A payload is a row in payloads (its size) and its bytes in
// payload_chunks rows of at most chunkMax bytes, so a large payload never
// meets SQLite's 1 GB value limit and an append writes only its own bytes:
// an append that fits into the last chunk while that stays at most
// chunkSmall bytes rewrites that chunk (small appends, such as a job's log
// lines, end up in chunks of about chunkSmall), any other adds chunks.

const (
	chunkMax   = 1 << 20  // bytes: the largest chunk written
	chunkSmall = 64 << 10 // bytes: appends coalesce into a last chunk up to this size
)

var (
	_ store.Payloads = (*Store)(nil)
	_ store.Jobs     = (*Store)(nil)
	_ store.Pruner   = (*Store)(nil)
)

func (s *Store) failPayload(op, taskID, name string, err error) error {
	return fmt.Errorf("sqlitestore: %s payload %s/%s in %s: %w", op, taskID, name, s.path, err)
}

func checkPayload(taskID, name string) error {
	if taskID == "" {
		return errors.New("empty task id")
	}
	return store.CheckPayloadName(name)
}

// PutPayload implements [store.Payloads]: the payload's old chunks go and
// the new ones come in one transaction. data may be empty (a payload of
// size 0) and is copied; the caller may reuse it.
func (s *Store) PutPayload(ctx context.Context, taskID, name string, data []byte) error {
	if err := checkPayload(taskID, name); err != nil {
		return s.failPayload("put", taskID, name, err)
	}
	err := s.write(ctx, false, func(ctx context.Context) error {
		if _, err := s.conn.ExecContext(ctx, `DELETE FROM payload_chunks WHERE task_id = ? AND name = ?`, taskID, name); err != nil {
			return err
		}
		if _, err := s.conn.ExecContext(ctx, `
INSERT INTO payloads (task_id, name, size) VALUES (?, ?, 0)
ON CONFLICT (task_id, name) DO UPDATE SET size = 0`, taskID, name); err != nil {
			return err
		}
		_, err := s.appendChunks(ctx, taskID, name, 0, nil, data)
		return err
	})
	if err != nil {
		return s.failPayload("put", taskID, name, err)
	}
	return nil
}

// AppendPayload implements [store.Payloads]. Appends are writes of the
// group commit, so they are applied one after another, each whole.
func (s *Store) AppendPayload(ctx context.Context, taskID, name string, data []byte) (int64, error) {
	if err := checkPayload(taskID, name); err != nil {
		return 0, s.failPayload("append to", taskID, name, err)
	}
	var size int64
	err := s.write(ctx, false, func(ctx context.Context) error {
		var cur int64
		err := s.conn.QueryRowContext(ctx, `SELECT size FROM payloads WHERE task_id = ? AND name = ?`, taskID, name).Scan(&cur)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			if _, err := s.conn.ExecContext(ctx, `INSERT INTO payloads (task_id, name, size) VALUES (?, ?, 0)`, taskID, name); err != nil {
				return err
			}
		case err != nil:
			return err
		}
		var last *chunk
		if cur > 0 && len(data) < chunkSmall {
			var c chunk
			err := s.conn.QueryRowContext(ctx, `
SELECT off, data FROM payload_chunks WHERE task_id = ? AND name = ? ORDER BY off DESC LIMIT 1`, taskID, name).Scan(&c.off, &c.data)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			if err == nil && len(c.data)+len(data) <= chunkSmall {
				last = &c
			}
		}
		size, err = s.appendChunks(ctx, taskID, name, cur, last, data)
		return err
	})
	if err != nil {
		return 0, s.failPayload("append to", taskID, name, err)
	}
	return size, nil
}

type chunk struct {
	off  int64
	data []byte
}

// appendChunks writes data at offset cur of the payload (inside the
// current transaction), into last when given (the payload's last chunk,
// which data fits into), else into new chunks, and sets the size; it
// returns the new size.
func (s *Store) appendChunks(ctx context.Context, taskID, name string, cur int64, last *chunk, data []byte) (int64, error) {
	if last != nil {
		joined := append(append(make([]byte, 0, len(last.data)+len(data)), last.data...), data...)
		if _, err := s.conn.ExecContext(ctx, `UPDATE payload_chunks SET n = ?, data = ? WHERE task_id = ? AND name = ? AND off = ?`,
			len(joined), joined, taskID, name, last.off); err != nil {
			return 0, err
		}
	} else {
		for off := 0; off < len(data); off += chunkMax {
			part := data[off:min(off+chunkMax, len(data))]
			if _, err := s.conn.ExecContext(ctx, `INSERT INTO payload_chunks (task_id, name, off, n, data) VALUES (?, ?, ?, ?, ?)`,
				taskID, name, cur+int64(off), len(part), part); err != nil {
				return 0, err
			}
		}
	}
	size := cur + int64(len(data))
	if _, err := s.conn.ExecContext(ctx, `UPDATE payloads SET size = ? WHERE task_id = ? AND name = ?`, size, taskID, name); err != nil {
		return 0, err
	}
	return size, nil
}

// ReadPayload implements [store.Payloads]. The size and the bytes come
// from one SELECT, so one snapshot: a read never mixes two Puts. A
// negative offset is an error.
func (s *Store) ReadPayload(ctx context.Context, taskID, name string, offset, limit int64) ([]byte, int64, error) {
	if err := checkPayload(taskID, name); err != nil {
		return nil, 0, s.failPayload("read", taskID, name, err)
	}
	if offset < 0 {
		return nil, 0, s.failPayload("read", taskID, name, fmt.Errorf("negative offset %d", offset))
	}
	end := int64(math.MaxInt64)
	if limit > 0 && offset <= math.MaxInt64-limit {
		end = offset + limit
	}
	rows, err := s.r.QueryContext(ctx, `
SELECT p.size, c.off, c.data FROM payloads p
LEFT JOIN payload_chunks c ON c.task_id = p.task_id AND c.name = p.name AND c.off < ?3 AND c.off + c.n > ?4
WHERE p.task_id = ?1 AND p.name = ?2 ORDER BY c.off`, taskID, name, end, offset)
	if err != nil {
		return nil, 0, s.failPayload("read", taskID, name, err)
	}
	defer rows.Close()
	var (
		out   []byte
		size  int64
		found bool
	)
	for rows.Next() {
		var off sql.NullInt64
		var data []byte
		if err := rows.Scan(&size, &off, &data); err != nil {
			return nil, 0, s.failPayload("read", taskID, name, err)
		}
		found = true
		if !off.Valid {
			continue // no chunk in the range
		}
		if out == nil {
			out = make([]byte, 0, min(end, size)-offset)
		}
		lo, hi := max(offset-off.Int64, 0), min(end-off.Int64, int64(len(data)))
		out = append(out, data[lo:hi]...)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, s.failPayload("read", taskID, name, err)
	}
	if !found {
		return nil, 0, s.failPayload("read", taskID, name, store.ErrNoPayload)
	}
	return out, size, nil
}
