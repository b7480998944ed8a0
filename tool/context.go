package tool

import "context"

// taskIDKey is the context key of the task id.
type taskIDKey struct{}

// WithTaskID returns a copy of ctx that carries taskID, the id of the run
// (task) a call belongs to, as the durable record keys it. The
// result.Recorder sets it on the context it hands the tool, so a tool can
// keep per-task files (execute's full output in OutputDir/<taskId>/)
// without a field on [Call]. An empty taskID returns ctx unchanged.
func WithTaskID(ctx context.Context, taskID string) context.Context {
	if taskID == "" {
		return ctx
	}
	return context.WithValue(ctx, taskIDKey{}, taskID)
}

// TaskID returns the task id ctx carries ([WithTaskID]), "" when none.
func TaskID(ctx context.Context) string {
	s, _ := ctx.Value(taskIDKey{}).(string)
	return s
}
