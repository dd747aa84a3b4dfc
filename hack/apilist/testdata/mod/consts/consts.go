package consts

import "time"

type Mode int

const (
	ModeA Mode = iota
	ModeB
	mode
)

const (
	Name    = "apitest"
	Pi      = 3.14159
	Timeout = 90 * time.Second
	Big     = 1 << 70
)

var (
	ErrClosed error
	Default   = map[string][]Mode{}
	hidden    int
)
