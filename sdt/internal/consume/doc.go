// Package consume is the consumers of probe fires in the process: traces (per-P
// buffers) and aggregations (per-P folds), and their streams in ctlproto's frames.
package consume
