package bench

//go:generate go run ./internal/gen
