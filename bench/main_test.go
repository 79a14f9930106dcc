package bench

import (
	"fmt"
	"github.com/gosdt/gosdt/internal/hooks"
	"os"
	"testing"

	"github.com/gosdt/gosdt/sdt"
)

// TestMain puts the compiler's check back at the "branch" variant's sites before any
// of them has run (Unseal refuses sites that were ever enabled), so that the branch
// and sealed variants run side by side in one process. Their probes are distinct
// (providers bbranch and bsealed), so the sealed variant is untouched.
func TestMain(m *testing.M) {
	if d := sdt.Discovery(); d.Reason == "" {
		if _, err := hooks.Unseal("bbranch:::"); err != nil {
			fmt.Fprintln(os.Stderr, "bench: unseal the branch variant:", err)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}
