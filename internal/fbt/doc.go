// Package fbt gives the functions a rules file names function-boundary probes at
// compile time, for `go build -toolexec "sdtctl toolexec -rules FILE"`:
// fbt:<package>:<function>:entry and :return, ordinary gosdt probes (package sdt's
// Func).
//
// The contract: a rules file in error stops the build with FILE:LINE; a function that
// is rewritten keeps every line of its source where it was (panics, stack traces and
// coverage point at the user's lines); while its probes are off it runs its body as
// written behind two sealed jumps; a rule that matches nothing is reported when the
// program is linked; a package gosdt itself depends on is reported and left alone.
package fbt
