module example.org/ext

go 1.26.0
