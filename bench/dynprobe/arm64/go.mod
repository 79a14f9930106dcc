module github.com/gosdt/gosdt/bench/dynprobe/arm64
go 1.26
