package otelsdt_test

import "context"

// handle is instrumented by the fbt rewriter into handle_gen_test.go (see
// TestGeneratedHandleIsCurrent): an fbt function with a context.Context parameter.
//
//go:noinline
func handle(ctx context.Context, n int) int {
	return n
}
