package store

import "context"

// Owners is an optional interface of a [Store] shared by several
// processes (or several open instances): each open store is an owner,
// with an id it writes into the records it puts, alive while the store
// is open and its process runs. A background-job runner puts Owner() into
// [Job.Owner] and, finding a job "running" whose owner is not alive,
// knows its process ended and marks it [JobLost].
type Owners interface {
	// Owner returns this store's owner id (non-empty).
	Owner() string
	// OwnerAlive reports whether the store with that owner id is still
	// open in a running process (this store's own id: true). An id that
	// no store ever had is not alive. An error means liveness could not
	// be read (then the caller must not treat the owner as gone).
	OwnerAlive(ctx context.Context, owner string) (bool, error)
}
