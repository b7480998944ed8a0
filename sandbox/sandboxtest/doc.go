// Package sandboxtest is the conformance suite every sandbox.Sandbox adapter
// passes: the file operations (List, Read, Write, Edit, Search) and their
// confinement to the workspace, one subtest per field case of
// shared/cases (BH-001 … BH-058) plus the contract's bounds and errors.
//
// An adapter's test calls Run with a constructor that opens a sandbox on a
// fresh local folder:
//
//	func TestConformance(t *testing.T) {
//		sandboxtest.Run(t, func(t *testing.T, workspace string) sandbox.Sandbox {
//			s, err := localsandbox.New(workspace, nil)
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// The suite prepares files in the folder with the os package and checks the
// effects on disk byte for byte, so a remote adapter must mirror that folder
// (or run on the same host). Every subtest gets its own workspace and its
// own "outside" folder, which the adapter must never read, write or create
// anything in. Symlink cases need a host that can create symlinks; where it
// cannot, those subtests are skipped with the reason.
package sandboxtest
