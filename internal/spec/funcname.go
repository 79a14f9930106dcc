package spec

import "strings"

// SplitFunc splits a Go symbol name into its package path and the function name as
// DTrace shows it: "github.com/x/y.(*T).M" -> ("github.com/x/y", "y.(*T).M"),
// "main.worker" -> ("main", "main.worker"). It follows the runtime's rule: the package
// ends at the first dot after the last slash (outside any generic brackets).
func SplitFunc(sym string) (module, fn string) {
	slash := strings.LastIndexByte(cut(sym), '/')
	dot := strings.IndexByte(sym[slash+1:], '.')
	if dot < 0 {
		return sym, sym[slash+1:]
	}
	return sym[:slash+1+dot], sym[slash+1:]
}

// JoinFunc is the inverse of SplitFunc: the runtime's name of the function sites name
// module and fn ("example.com/app/store", "store.(*DB).Get").
func JoinFunc(module, fn string) string {
	if i := strings.LastIndexByte(cut(module), '/'); i >= 0 {
		return module[:i+1] + fn
	}
	return fn
}

// cut returns sym up to its first '[' so that slashes in type arguments do not count.
func cut(sym string) string {
	if i := strings.IndexByte(sym, '['); i >= 0 {
		return sym[:i]
	}
	return sym
}
