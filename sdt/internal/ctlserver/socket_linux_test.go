package ctlserver

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestASCIIFields: asciiFields splits the kernel's /proc tables as strings.Fields does,
// and overflowUID reads this machine's the way it did with strings.Fields.
func TestASCIIFields(t *testing.T) {
	for _, s := range []string{
		"         0          0 4294967295\n",
		"         0       1000          1\n         1     100000      65536\n",
		"", "\n", " \t\n ", "65534\n", "a", "a b", "\ta\t\tb\n",
	} {
		if got, want := asciiFields(s), strings.Fields(s); !slices.Equal(got, want) {
			t.Errorf("asciiFields(%q) = %q, want %q", s, got, want)
		}
	}
	m, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		t.Skipf("no uid map: %v", err)
	}
	identity := strings.Join(strings.Fields(string(m)), " ") == "0 0 4294967295"
	if got := overflowUID() == ^uint32(0); got != identity {
		t.Errorf("overflowUID() = %d with uid_map %q", overflowUID(), m)
	}
}
