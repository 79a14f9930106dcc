package fprobe

// The tests' targets live in the module, whose packages are refused: let them in.
func init() { allowed = "github.com/gosdt/gosdt/sdt/internal/fprobe/internal/target." }
