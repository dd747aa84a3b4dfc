module example.com/apitest

go 1.26.0

require example.org/ext v0.0.0

replace example.org/ext => ../ext
