package sdt

//go:generate go run ./internal/gen
//go:generate go run ./internal/genaligned -o aligned_gen_test.go
