// Package functab reads Go's function table (the pclntab the runtime unwinds and names
// functions with): entries, names, files and lines, pc-value tables and inline trees,
// of the running program (Self) or of a binary file (package elffile), for either architecture.
package functab
