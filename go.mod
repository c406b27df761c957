module github.com/sloserve/sloserve

go 1.26
