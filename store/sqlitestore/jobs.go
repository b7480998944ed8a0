package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aibuddy/aibuddy/store"
)

// A job is a row of table jobs: the [store.Job] as a JSON document (all
// fields but Detail, under their Go names), Detail byte for byte in a
// column of its own (encoding/json would compact it), and copies of the
// fields queries use (task_id, state, started_at) as indexed columns. A
// field added to store.Job later is kept in the document without a schema
// step.

func (s *Store) failJob(op, jobID string, err error) error {
	return fmt.Errorf("sqlitestore: %s job %s in %s: %w", op, jobID, s.path, err)
}

// encodeJob is the document and the detail column of j.
func encodeJob(j *store.Job) (doc []byte, detail any, err error) {
	c := *j
	c.Detail = nil
	if doc, err = json.Marshal(&c); err != nil {
		return nil, nil, err
	}
	if j.Detail != nil {
		detail = []byte(j.Detail)
	}
	return doc, detail, nil
}

func decodeJob(doc, detail []byte) (*store.Job, error) {
	var j store.Job
	if err := json.Unmarshal(doc, &j); err != nil {
		return nil, fmt.Errorf("decode job document: %w", err)
	}
	j.Detail = nil // the document's "Detail": null
	if detail != nil {
		j.Detail = json.RawMessage(detail)
	}
	return &j, nil
}

// checkJob returns an error for a job the store cannot keep.
func checkJob(j *store.Job) error {
	switch {
	case j == nil:
		return errors.New("nil job")
	case j.JobID == "":
		return errors.New("empty JobID")
	case j.TaskID == "":
		return errors.New("empty TaskID")
	}
	return nil
}

// PutJob implements [store.Jobs]. JobID and TaskID must be non-empty;
// StartedAt zero or within the years 1678-2262.
func (s *Store) PutJob(ctx context.Context, j *store.Job) error {
	id := ""
	if j != nil {
		id = j.JobID
	}
	if err := checkJob(j); err != nil {
		return s.failJob("put", id, err)
	}
	started, err := nanos(j.StartedAt)
	if err != nil {
		return s.failJob("put", id, fmt.Errorf("StartedAt: %w", err))
	}
	doc, detail, err := encodeJob(j)
	if err != nil {
		return s.failJob("put", id, err)
	}
	err = s.write(ctx, false, func(ctx context.Context) error {
		_, err := s.conn.ExecContext(ctx, `
INSERT INTO jobs (job_id, task_id, state, started_at, doc, detail) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (job_id) DO UPDATE SET task_id = excluded.task_id, state = excluded.state,
  started_at = excluded.started_at, doc = excluded.doc, detail = excluded.detail`,
			j.JobID, j.TaskID, string(j.State), started, doc, detail)
		return err
	})
	if err != nil {
		return s.failJob("put", id, err)
	}
	return nil
}

// GetJob implements [store.Jobs].
func (s *Store) GetJob(ctx context.Context, jobID string) (*store.Job, error) {
	var doc, detail []byte
	err := s.r.QueryRowContext(ctx, `SELECT doc, detail FROM jobs WHERE job_id = ?`, jobID).Scan(&doc, &detail)
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNoJob
	}
	if err != nil {
		return nil, s.failJob("get", jobID, err)
	}
	j, err := decodeJob(doc, detail)
	if err != nil {
		return nil, s.failJob("get", jobID, err)
	}
	return j, nil
}

// ListJobs implements [store.Jobs]; jobs with the same StartedAt come in
// the order they were first put, jobs without one first.
func (s *Store) ListJobs(ctx context.Context, taskID string) ([]*store.Job, error) {
	q := `SELECT doc, detail FROM jobs ORDER BY started_at, rowid`
	args := []any{}
	if taskID != "" {
		q = `SELECT doc, detail FROM jobs WHERE task_id = ? ORDER BY started_at, rowid`
		args = append(args, taskID)
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.failJob("list", "of task "+taskID, err)
	}
	defer rows.Close()
	var out []*store.Job
	for rows.Next() {
		var doc, detail []byte
		if err := rows.Scan(&doc, &detail); err != nil {
			return nil, s.failJob("list", "of task "+taskID, err)
		}
		j, err := decodeJob(doc, detail)
		if err != nil {
			return nil, s.failJob("list", "of task "+taskID, err)
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, s.failJob("list", "of task "+taskID, err)
	}
	return out, nil
}
