package sdt

//go:generate go run ./internal/gen
