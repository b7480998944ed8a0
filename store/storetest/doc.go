// Package storetest is the conformance suite every [store.Store] backend
// passes: [Run] for any store (with the cases of the optional interfaces
// it implements: payloads, jobs, retention, provider ids), [RunFile] for
// stores kept at a location named by a string (a file; for a server
// backend, a schema derived from it), which adds reopening, two instances
// on one location, two processes writing at once, reopens after the
// writing process was killed with SIGKILL (records, payloads, running
// calls marked interrupted) and owner liveness.
//
// The multi-process cases re-execute the test binary as a child process
// that opens the same file and writes; the backend's test package hooks
// the child in its TestMain:
//
//	func TestMain(m *testing.M) {
//		if storetest.IsChild() {
//			os.Exit(storetest.ChildMain(func(path string) (store.Store, error) {
//				return mystore.Open(path, nil)
//			}))
//		}
//		os.Exit(m.Run())
//	}
//
// Contract points the suite checks beyond the interface's own comments:
//   - Input, Output and Model come back byte for byte (whitespace, key
//     order, escapes, number spelling), including tens of MiB; StartedAt
//     and EndedAt within a millisecond (Equal instants, any location); a
//     zero time stays zero.
//   - Put writes the assigned Seq back into the record; a zero Seq on a
//     replacement within the same task keeps the record's Seq; Seqs
//     assigned by concurrent writers (goroutines or processes) are unique
//     and gapless per task.
//   - Tasks orders by the latest Put into each task; ReplaceModel does not
//     change that order.
//   - ReplaceModel with a model that is not strictly smaller in bytes
//     reports false and changes nothing (not Compaction, not Pointer).
//   - Put rejects a nil record, an empty ToolCallID or an empty TaskID;
//     an unknown task lists as empty without error; a cancelled context
//     fails with an error wrapping context.Canceled.
package storetest
