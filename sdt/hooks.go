package sdt

import "github.com/gosdt/gosdt/internal/hooks"

// Set before any package that imports sdt initialises (a variable, not an init
// function, so that no file-name order is involved).
var _ = func() bool {
	hooks.SetPatchOptions = setPatchOptions
	return true
}()
