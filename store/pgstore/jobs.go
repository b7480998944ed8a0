package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/aibuddy/aibuddy/store"
)

// A job is a row of table jobs: the [store.Job] as a jsonb document (all
// fields but Detail, under their Go names), Detail byte for byte in a
// bytea column (jsonb would normalize it), and copies of the fields
// queries use (task_id, state, started_at) as indexed columns. A field
// added to store.Job later lands in the document without a schema step.

func (s *Store) failJob(op, jobID string, err error) error {
	return fmt.Errorf("pgstore: %s job %s in %s: %w", op, jobID, s.where, err)
}

func encodeJob(j *store.Job) (doc []byte, detail []byte, err error) {
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

func scanJob(row pgx.CollectableRow) (*store.Job, error) {
	var doc, detail []byte
	if err := row.Scan(&doc, &detail); err != nil {
		return nil, err
	}
	var j store.Job
	if err := json.Unmarshal(doc, &j); err != nil {
		return nil, fmt.Errorf("decode job document: %w", err)
	}
	j.Detail = nil
	if detail != nil {
		j.Detail = json.RawMessage(detail)
	}
	return &j, nil
}

// PutJob implements [store.Jobs]. JobID and TaskID must be non-empty;
// StartedAt zero or within the years 1678-2262.
func (s *Store) PutJob(ctx context.Context, j *store.Job) error {
	id := ""
	if j != nil {
		id = j.JobID
	}
	switch {
	case j == nil:
		return s.failJob("put", id, errors.New("nil job"))
	case j.JobID == "":
		return s.failJob("put", id, errors.New("empty JobID"))
	case j.TaskID == "":
		return s.failJob("put", id, errors.New("empty TaskID"))
	}
	started, err := nanos(j.StartedAt)
	if err != nil {
		return s.failJob("put", id, fmt.Errorf("StartedAt: %w", err))
	}
	doc, detail, err := encodeJob(j)
	if err != nil {
		return s.failJob("put", id, err)
	}
	err = s.inTx(ctx, false, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
INSERT INTO jobs (job_id, task_id, state, started_at, doc, detail) VALUES ($1, $2, $3, $4, $5::text::jsonb, $6)
ON CONFLICT (job_id) DO UPDATE SET task_id = excluded.task_id, state = excluded.state,
  started_at = excluded.started_at, doc = excluded.doc, detail = excluded.detail`,
			j.JobID, j.TaskID, string(j.State), started, string(doc), detail)
		return err
	})
	if err != nil {
		return s.failJob("put", id, err)
	}
	return nil
}

// GetJob implements [store.Jobs].
func (s *Store) GetJob(ctx context.Context, jobID string) (*store.Job, error) {
	if err := ctx.Err(); err != nil {
		return nil, s.failJob("get", jobID, err)
	}
	rows, err := s.pool.Query(ctx, `SELECT doc, detail FROM jobs WHERE job_id = $1`, jobID)
	if err != nil {
		return nil, s.failJob("get", jobID, err)
	}
	j, err := pgx.CollectExactlyOneRow(rows, scanJob)
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNoJob
	}
	if err != nil {
		return nil, s.failJob("get", jobID, err)
	}
	return j, nil
}

// ListJobs implements [store.Jobs]: oldest StartedAt first (none first),
// ties in the order the jobs were first put.
func (s *Store) ListJobs(ctx context.Context, taskID string) ([]*store.Job, error) {
	rows, err := s.pool.Query(ctx, `SELECT doc, detail FROM jobs WHERE $1 = '' OR task_id = $1
ORDER BY started_at NULLS FIRST, added`, taskID)
	if err != nil {
		return nil, s.failJob("list", "of task "+taskID, err)
	}
	out, err := pgx.CollectRows(rows, scanJob)
	if err != nil {
		return nil, s.failJob("list", "of task "+taskID, err)
	}
	return out, nil
}
