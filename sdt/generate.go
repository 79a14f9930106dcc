package sdt

//go:generate go run ./internal/gen
//go:generate go run ./internal/genaligned -o aligned_gen_test.go
//go:generate go run ./internal/genaligned -pkg main -o ../bench/internal/alignedprog/aligned_gen.go
