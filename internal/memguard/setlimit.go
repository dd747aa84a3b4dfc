package memguard

import "runtime/debug"

func setMemoryLimit(b int64) { debug.SetMemoryLimit(b) }
