// Package patch applies a batch of rewrites to the running process's own text: it compares
// every site before writing, keeps pages RWX only while writing and always restores RX, writes
// with single atomic stores, inside a stop-the-world rendezvous of every P, or plainly where
// the caller proves no thread runs the text (Quiescent), then serializes the instruction
// stream of every core that may have run it. Only linux/amd64 and linux/arm64 are
// supported; elsewhere Apply returns ErrNotSupported.
package patch
