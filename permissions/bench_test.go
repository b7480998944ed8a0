package permissions_test

import (
	"testing"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/permissions"
)

// BenchmarkPathRulesMatch is the cost the file tools' walks pay per entry
// they meet: the default denied paths matched against one workspace path.
func BenchmarkPathRulesMatch(b *testing.B) {
	eng, err := permissions.New(permissions.Options{Workspace: "/ws", DeniedPaths: approval.DefaultDeniedPaths(), NoCredentialPaths: true})
	if err != nil {
		b.Fatal(err)
	}
	d := eng.DeniedPaths()
	b.ReportAllocs()
	for b.Loop() {
		d.Match("src/net/http/internal/chunked.go", false)
	}
}
