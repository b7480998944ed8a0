package benchbin_test

import (
	"fmt"
	"os"

	"github.com/aibuddy/aibuddy/bench/internal/benchbin"
)

// A bench builds the binary once into its temporary folder, or takes the
// one given on its command line.
func ExampleAibuddy() {
	dir, _ := os.MkdirTemp("", "bench-")
	defer os.RemoveAll(dir)
	bin, err := benchbin.Aibuddy(dir, "")
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = os.Stat(bin)
	fmt.Println(err == nil)
	// Output: true
}
