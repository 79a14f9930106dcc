// Package spec parses DTrace-style probe descriptions (provider:module:function:name)
// and matches them, field by field with shell-style globs, against probe names.
package spec
