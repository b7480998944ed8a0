package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/aibuddy/aibuddy/store"
)

// A payload is a row of payloads (its size) and its bytes in rows of
// payload_chunks of at most chunkMax bytes each, so an append writes only
// its own bytes and no value nears PostgreSQL's 1 GB field limit; an
// append that fits into the last chunk while that stays at most
// chunkSmall bytes extends that chunk (data || $1), so a log of small
// lines is not a row per line. Writers of one payload queue on its
// payloads row (SELECT ... FOR UPDATE); readers read the size and the
// chunks in one SELECT, one snapshot.

const (
	chunkMax   = 1 << 20  // bytes: the largest chunk written
	chunkSmall = 64 << 10 // bytes: appends coalesce into a last chunk up to this size
)

func (s *Store) failPayload(op, taskID, name string, err error) error {
	return fmt.Errorf("pgstore: %s payload %s/%s in %s: %w", op, taskID, name, s.where, err)
}

func checkPayload(taskID, name string) error {
	if taskID == "" {
		return errors.New("empty task id")
	}
	return store.CheckPayloadName(name)
}

// PutPayload implements [store.Payloads] in one transaction.
func (s *Store) PutPayload(ctx context.Context, taskID, name string, data []byte) error {
	if err := checkPayload(taskID, name); err != nil {
		return s.failPayload("put", taskID, name, err)
	}
	err := s.inTx(ctx, false, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
INSERT INTO payloads (task_id, name, size) VALUES ($1, $2, 0)
ON CONFLICT (task_id, name) DO UPDATE SET size = 0`, taskID, name); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM payload_chunks WHERE task_id = $1 AND name = $2`, taskID, name); err != nil {
			return err
		}
		_, err := appendChunks(ctx, tx, taskID, name, 0, -1, data)
		return err
	})
	if err != nil {
		return s.failPayload("put", taskID, name, err)
	}
	return nil
}

// AppendPayload implements [store.Payloads].
func (s *Store) AppendPayload(ctx context.Context, taskID, name string, data []byte) (int64, error) {
	if err := checkPayload(taskID, name); err != nil {
		return 0, s.failPayload("append to", taskID, name, err)
	}
	var size int64
	err := s.inTx(ctx, false, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO payloads (task_id, name, size) VALUES ($1, $2, 0) ON CONFLICT DO NOTHING`, taskID, name); err != nil {
			return err
		}
		var cur int64
		if err := tx.QueryRow(ctx, `SELECT size FROM payloads WHERE task_id = $1 AND name = $2 FOR UPDATE`, taskID, name).Scan(&cur); err != nil {
			return err
		}
		last := int64(-1)
		if cur > 0 && len(data) < chunkSmall {
			var off int64
			var n int
			err := tx.QueryRow(ctx, `SELECT off, n FROM payload_chunks WHERE task_id = $1 AND name = $2 ORDER BY off DESC LIMIT 1`,
				taskID, name).Scan(&off, &n)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			if err == nil && n+len(data) <= chunkSmall {
				last = off
			}
		}
		var err error
		size, err = appendChunks(ctx, tx, taskID, name, cur, last, data)
		return err
	})
	if err != nil {
		return 0, s.failPayload("append to", taskID, name, err)
	}
	return size, nil
}

// appendChunks writes data at offset cur of the payload, into the chunk
// at offset last when last >= 0 (the last chunk, which data fits into),
// else into new chunks, sets the size and returns it.
func appendChunks(ctx context.Context, tx pgx.Tx, taskID, name string, cur, last int64, data []byte) (int64, error) {
	if last >= 0 {
		if _, err := tx.Exec(ctx, `UPDATE payload_chunks SET data = data || $1, n = n + $2 WHERE task_id = $3 AND name = $4 AND off = $5`,
			data, len(data), taskID, name, last); err != nil {
			return 0, err
		}
	} else {
		for off := 0; off < len(data); off += chunkMax {
			part := data[off:min(off+chunkMax, len(data))]
			if _, err := tx.Exec(ctx, `INSERT INTO payload_chunks (task_id, name, off, n, data) VALUES ($1, $2, $3, $4, $5)`,
				taskID, name, cur+int64(off), len(part), part); err != nil {
				return 0, err
			}
		}
	}
	size := cur + int64(len(data))
	_, err := tx.Exec(ctx, `UPDATE payloads SET size = $1 WHERE task_id = $2 AND name = $3`, size, taskID, name)
	return size, err
}

// ReadPayload implements [store.Payloads]; a negative offset is an error.
func (s *Store) ReadPayload(ctx context.Context, taskID, name string, offset, limit int64) ([]byte, int64, error) {
	if err := checkPayload(taskID, name); err != nil {
		return nil, 0, s.failPayload("read", taskID, name, err)
	}
	if offset < 0 {
		return nil, 0, s.failPayload("read", taskID, name, fmt.Errorf("negative offset %d", offset))
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, s.failPayload("read", taskID, name, err)
	}
	end := int64(math.MaxInt64)
	if limit > 0 && offset <= math.MaxInt64-limit {
		end = offset + limit
	}
	rows, err := s.pool.Query(ctx, `
SELECT p.size, c.off, c.data FROM payloads p
LEFT JOIN payload_chunks c ON c.task_id = p.task_id AND c.name = p.name AND c.off < $3 AND c.off + c.n > $4
WHERE p.task_id = $1 AND p.name = $2 ORDER BY c.off`, taskID, name, end, offset)
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
		var off *int64
		var data []byte
		if err := rows.Scan(&size, &off, &data); err != nil {
			return nil, 0, s.failPayload("read", taskID, name, err)
		}
		found = true
		if off == nil {
			continue
		}
		if out == nil {
			out = make([]byte, 0, min(end, size)-offset)
		}
		lo, hi := max(offset-*off, 0), min(end-*off, int64(len(data)))
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
